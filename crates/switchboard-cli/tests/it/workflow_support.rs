//! What the `workflow` tests share: a state directory of their own for every test (so no test
//! reads another's runs, nor `~/.local/state`), the binary run in it, and definition files.

use std::{
    path::{Path, PathBuf},
    process::Output,
};

use crate::common::{bounded, switchboard};

/// A fresh directory under the temp directory, removed on drop.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    pub(crate) fn new() -> Self {
        let path =
            std::env::temp_dir().join(format!("switchboard-workflow-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&path).expect("the temp directory is created");
        Self(path)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }

    /// `NAME` in the directory, as a string for a command line.
    pub(crate) fn join(&self, name: &str) -> String {
        self.0.join(name).display().to_string()
    }

    /// Writes `text` to `NAME` in the directory and returns its path.
    pub(crate) fn write(&self, name: &str, text: &str) -> String {
        let path = self.join(name);
        std::fs::write(&path, text).expect("the file is written");
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `switchboard ARGS` with `dir` as its state directory.
pub(crate) fn in_state(dir: &TempDir, args: &[&str]) -> tokio::process::Command {
    let mut command = switchboard(args);
    command.env("SWITCHBOARD_STATE_DIR", dir.join("state"));
    command
}

/// Runs `switchboard ARGS` in `dir`'s state and checks its exit code.
pub(crate) async fn run_in(dir: &TempDir, args: &[&str], code: i32) -> Output {
    let output = bounded("the switchboard binary", in_state(dir, args).output())
        .await
        .expect("the binary runs");
    assert_eq!(
        output.status.code(),
        Some(code),
        "switchboard {args:?}\nstdout:\n{}\nstderr:\n{}",
        text(&output.stdout),
        text(&output.stderr),
    );
    output
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub(crate) fn json(bytes: &[u8]) -> serde_json::Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|error| panic!("not JSON ({error}): {}", text(bytes)))
}

/// A manager of acme.
pub(crate) const MARK: [&str; 6] = ["--org", "acme", "--user", "mark", "--role", "manager"];

/// An example definition of `docs/examples/workflows`.
pub(crate) fn example(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/examples/workflows")
        .join(name)
        .display()
        .to_string()
}

/// `args` followed by `more`.
pub(crate) fn with<'a>(args: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
    args.iter().chain(more).copied().collect()
}
