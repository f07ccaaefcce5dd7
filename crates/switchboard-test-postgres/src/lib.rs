#![doc = include_str!("../README.md")]

mod binaries;
mod cluster;
mod database;
mod error;
mod scram;

pub use binaries::server_bindir;
pub use cluster::{HOST, SUPERUSER, TestCluster};
pub use database::{DATABASE_PREFIX, TestDatabase, URL_VARIABLE, redact, test_database};
pub use error::{ClusterError, DatabaseError};
