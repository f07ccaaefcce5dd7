//! The integration tests of `switchboard-link`, in one binary.

#[cfg(feature = "cluster")]
mod cluster;
