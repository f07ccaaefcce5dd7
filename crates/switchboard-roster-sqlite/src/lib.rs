#![doc = include_str!("../README.md")]

mod schema;
mod store;

pub use schema::{APPLICATION_ID, SCHEMA_VERSION};
pub use store::{SqliteOptions, SqliteRosterStore};
/// Opening a database is `switchboard-sqlite`'s job, shared by every SQLite store; its error
/// and `synchronous` setting are this crate's too.
pub use switchboard_sqlite::{OpenError, Synchronous};
