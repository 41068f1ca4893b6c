//! TiM's thought memory: extraction ([`extract`]), the per-tenant memory and its
//! organisation ([`memory`]).

pub mod extract;
mod lexicon;
pub mod memory;
