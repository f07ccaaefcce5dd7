#![doc = include_str!("../README.md")]

mod rows;
mod schema;
mod store;

pub use schema::SCHEMA_VERSION;
pub use store::PostgresRunStore;
/// Connecting and migrating is `switchboard-postgres`'s job, shared by every PostgreSQL store;
/// its options and its error are this crate's too.
pub use switchboard_postgres::{OpenError, PostgresOptions};
