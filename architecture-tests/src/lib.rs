#![doc = include_str!("../README.md")]
//!
//! This library holds what several test files share: where the workspace is, its
//! `cargo metadata`, its source files, and the contexts and audit lookups the invoke tests use.

pub mod calls;
pub mod workspace;
