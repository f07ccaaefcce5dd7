//! The `cargo xtask` binary as a user runs it.
//!
//! Being an integration test, this also makes `cargo test --workspace` build the binary, so the
//! test build leaves nothing for `cargo xtask ...` to compile (`.ci/run`, "one build for every
//! documented command").

use std::process::Command;

#[test]
fn help_lists_the_documented_commands() {
    let output = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .arg("--help")
        .output()
        .expect("the xtask binary runs");
    assert!(
        output.status.success(),
        "`cargo xtask --help` failed: {output:?}"
    );
    let help = String::from_utf8_lossy(&output.stdout);
    for command in ["catalog", "test", "bench", "postgres"] {
        assert!(
            help.lines()
                .any(|line| line.trim_start().starts_with(command)),
            "`cargo xtask --help` does not list `{command}`:\n{help}"
        );
    }
}
