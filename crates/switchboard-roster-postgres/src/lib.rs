#![doc = include_str!("../README.md")]

mod schema;
mod store;

pub use schema::SCHEMA_VERSION;
pub use store::PostgresRosterStore;
/// Connecting and migrating is `switchboard-postgres`'s job, shared by every PostgreSQL store;
/// its options and startup error are this crate's too.
pub use switchboard_postgres::{OpenError, PostgresOptions};
