//! Compile-fail and compile-pass tests for `#[tool]` and `#[derive(ToolInput)]`.
//!
//! Each `ui/fail/*.rs` has a `.stderr` next to it holding the exact diagnostics. Regenerate
//! them with `TRYBUILD=overwrite cargo test -p switchboard-core --test it ui`, then read every
//! changed file: the point is that each message is clear and points at the offending token.
//!
//! trybuild compiles the cases in a crate of its own, which first builds its own copy of the
//! dependencies: about two minutes on a fresh clone (nextest reports it `SLOW`), seconds after.

#[rustversion::attr(
    not(stable(1.95)),
    ignore = "stderr fixtures are recorded with Rust 1.95"
)]
#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
