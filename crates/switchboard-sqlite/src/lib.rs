#![doc = include_str!("../README.md")]

mod codec;
#[cfg(feature = "conformance")]
pub mod conformance;
mod error;
mod open;
mod schema;
mod shared;

pub use codec::{invalid_column, timestamp_from_sql, timestamp_to_sql};
pub use error::OpenError;
pub use open::{ConnectionSettings, Synchronous, open_database, open_reader};
pub use schema::{Migration, Schema};
pub use shared::SharedConnection;
