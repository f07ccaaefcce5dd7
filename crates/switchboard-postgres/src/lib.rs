#![doc = include_str!("../README.md")]

mod database;
mod error;
mod health;
mod listen;
mod options;
mod schema;

pub use database::Database;
pub use deadpool_postgres::Object as Client;
pub use error::{OpenError, QueryError};
pub use health::PROBE_INTERVAL;
pub use listen::{Listener, Notification};
pub use options::{PostgresOptions, Target, without_password};
pub use schema::{Migration, Schema, schema_version};
pub use tokio_postgres;
