#![doc = include_str!("../README.md")]
//!
//! This library holds what several test files share: where the workspace is, its
//! `cargo metadata`, its source files, the contexts and audit lookups the invoke tests use, and
//! the conformance kit's setup on the sample domains (which its benchmark shares).

pub mod calls;
pub mod kit;
pub mod workspace;
