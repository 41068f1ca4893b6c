//! The dispatcher: one module per subcommand, [`run`] picks it. What the commands share
//! (model loading, the door's options, rankers, extraction) is in `common`.

mod bench;
#[cfg(feature = "model-extractor")]
mod bench_extract;
mod bench_load;
mod bench_lsh;
mod bench_rank;
mod bench_search;
mod build;
mod common;
mod embed;
mod eval;
mod fact_model;
mod index;
mod info;
pub mod mcp;
mod model;
mod search;
mod serve;
mod store_admin;
mod structure_views;
mod synth;

use anyhow::Result;

use crate::cli::{BenchCommand, Cli, Command};

pub fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Index(a) => index::run(a),
        Command::Search(a) => search::run(a),
        Command::Embed(a) => embed::run(a),
        Command::Info(a) => info::run(a),
        Command::Eval(a) => eval::run(a),
        Command::Synth(a) => synth::run(a),
        Command::Bench(BenchCommand::Embed(a)) => bench::run(a),
        Command::Bench(BenchCommand::Lsh(a)) => bench_lsh::run(a),
        Command::Bench(BenchCommand::Search(a)) => bench_search::run(*a),
        Command::Bench(BenchCommand::Rank(a)) => bench_rank::run(*a),
        #[cfg(feature = "model-extractor")]
        Command::Bench(BenchCommand::Extract(a)) => bench_extract::run(a),
        #[cfg(not(feature = "model-extractor"))]
        Command::Bench(BenchCommand::Extract(_)) => Err(fact_model::not_built()),
        Command::Bench(BenchCommand::Load(a)) => bench_load::run(a),
        Command::Serve(a) => serve::run(a),
        Command::Compact(a) => serve::compact(a),
        Command::Snapshot(a) => store_admin::snapshot(a),
        Command::Verify(a) => store_admin::verify(a),
        Command::Restore(a) => store_admin::restore(a),
        Command::Model(c) => model::run(c),
        Command::Thoughts(a) => structure_views::thoughts(a),
        Command::Tree(a) => structure_views::tree(a),
        Command::Mcp(a) => mcp::run(a),
    }
}
