//! Empty: with a build script, cargo builds this crate's `[build-dependencies]`, the features
//! it unifies for build scripts and procedural macros.

fn main() {}
