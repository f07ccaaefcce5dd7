#![doc = include_str!("../README.md")]

mod codec;
mod query;
mod schema;
mod store;

pub use schema::{SCHEMA, SCHEMA_VERSION};
pub use store::PostgresAuditStore;
/// Connecting and migrating is `switchboard-postgres`'s job, shared by every PostgreSQL store;
/// its options and its startup error are this crate's too.
pub use switchboard_postgres::{OpenError, PostgresOptions};
