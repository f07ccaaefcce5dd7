#![doc = include_str!("../README.md")]

mod codec;
mod error;
mod schema;
mod select;
mod store;

pub use error::OpenError;
pub use schema::{APPLICATION_ID, SCHEMA_VERSION};
pub use store::{SqliteAuditStore, SqliteOptions, Synchronous};
