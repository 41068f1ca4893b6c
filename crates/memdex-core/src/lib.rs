//! memdex core: the types every other crate speaks — memory items, ids, granularity, model
//! identity, options structs, the tenant-name rule and errors. No I/O, no candle, no async runtime.

pub mod calendar;
mod error;
mod item;
mod model;
mod options;
pub mod rng;
mod tenant;
mod tenant_rule;

pub use calendar::{month_number, MONTH_NAMES};
pub use error::CoreError;
pub use item::{content_hash, MemoryItem, Role, Session, Turn};
pub use model::{ModelInfo, Pooling, TextKind};
pub use options::{DeviceChoice, Granularity, KeyRoles, OnError};
pub use tenant::{check_tenant_name, clip, clip_message, tenant_name_from};
pub use tenant_rule::{TenantProblem, MAX_TENANT_BYTES, TENANT_RULE};
