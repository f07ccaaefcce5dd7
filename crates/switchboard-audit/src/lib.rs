#![doc = include_str!("../README.md")]

mod action;
mod canonical;
#[cfg(feature = "conformance")]
pub mod conformance;
mod hash;
mod log;
mod memory;
mod pending;
mod record;
mod store;
mod tape;
mod writer;

pub use action::{ActionEvent, AuditAction, UnknownActionEvent};
pub use hash::{digest_json, digest_json_within, digest_of};
pub use log::{AuditConfig, AuditLog, AuditLogStats, Durability, Reservation, Submitted, WhenFull};
pub use memory::{DEFAULT_CAPACITY, MemoryAuditStore};
pub use pending::{Digestible, Payload, PendingRecord};
pub use record::{
    AuditId, AuditRecord, Digest, MAX_TOOL_NAME_BYTES, Outcome, UnknownOutcome, clamp_tool_name,
};
pub use store::{AuditError, AuditQuery, AuditStats, AuditStore};
pub use tape::Tape;
