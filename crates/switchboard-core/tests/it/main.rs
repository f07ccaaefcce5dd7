//! The core crate's integration tests, in one test binary: the tool definitions clients see,
//! and the compile-fail and compile-pass cases of `#[tool]` (trybuild).

mod definitions;
mod ui;
