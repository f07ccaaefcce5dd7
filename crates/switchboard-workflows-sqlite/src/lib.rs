#![doc = include_str!("../README.md")]

mod database;
mod rows;
mod schema;
mod store;

pub use database::{SqliteOptions, SqliteRunStore};
pub use schema::{APPLICATION_ID, SCHEMA_VERSION};
/// Opening a database is `switchboard-sqlite`'s job, shared by every SQLite store; its error
/// and `synchronous` setting are this crate's too.
pub use switchboard_sqlite::{OpenError, Synchronous};
