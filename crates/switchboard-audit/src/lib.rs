#![doc = include_str!("../README.md")]

mod canonical;
mod hash;
mod memory;
mod record;
mod store;

pub use hash::{digest_json, digest_of};
pub use memory::{DEFAULT_CAPACITY, MemoryAuditStore};
pub use record::{AuditId, AuditRecord, Digest, MAX_TOOL_NAME_BYTES, Outcome, clamp_tool_name};
pub use store::{Appended, AuditError, AuditQuery, AuditStats, AuditStore};
