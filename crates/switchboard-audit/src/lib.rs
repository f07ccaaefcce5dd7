#![doc = include_str!("../README.md")]

mod action;
#[cfg(feature = "conformance")]
pub mod conformance;
mod log;
mod memory;
mod record;
pub mod sql;
mod store;
mod switch;
mod writer;

pub use action::{ActionEvent, AuditAction, UnknownActionEvent};
pub use log::{
    AuditConfig, AuditLog, AuditLogStats, DEFAULT_STRICT_TIMEOUT, Durability, Reservation,
    Submitted, Waiting, WhenFull,
};
pub use memory::{DEFAULT_CAPACITY, MemoryAuditStore};
pub use record::{
    AuditId, AuditRecord, MAX_TOOL_NAME_BYTES, Outcome, UnknownOutcome, clamp_tool_name,
};
pub use store::{AuditError, AuditQuery, AuditStats, AuditStore, BatchKey};
pub use switch::{SWITCH_RECORD_TOOL, SwitchAction, SwitchRecord};
pub use switchboard_core::{Digest, DigestError, digest_json, digest_of};
