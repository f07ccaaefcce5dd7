//! Keeps a generated, committed file in step with what the generator produces now.
//!
//! This is rust-analyzer's `ensure_file_contents` (`xtask/src/codegen.rs`): in write mode the
//! file is rewritten only when its contents differ; in check mode nothing is written and a
//! stale file is reported with the command that fixes it. Line endings are compared after
//! normalising `\r\n` to `\n`, so a checkout with `core.autocrlf` is not reported as stale.

use std::{fs, io, path::Path};

use anyhow::Context as _;

/// Whether to write generated files or only compare them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Rewrite files whose contents differ.
    Write,
    /// Write nothing; report files whose contents differ.
    Check,
}

/// What happened to one generated file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileStatus {
    /// The file already had the generated contents.
    UpToDate,
    /// The file was missing or different, and has been written (write mode).
    Updated,
    /// The file is missing or different (check mode). Holds the message to show.
    Stale(String),
}

/// Makes `path` hold `contents` (write mode) or reports whether it does (check mode).
///
/// `display_path` is the path to print (relative to the workspace root) and `fix_command` the
/// command that regenerates the file, for the stale message.
pub fn ensure_file_contents(
    path: &Path,
    display_path: &str,
    contents: &str,
    fix_command: &str,
    mode: Mode,
) -> anyhow::Result<FileStatus> {
    let current = match fs::read_to_string(path) {
        Ok(current) => Some(current),
        Err(error) if error.kind() == io::ErrorKind::NotFound => None,
        Err(error) => {
            return Err(error).with_context(|| format!("cannot read {}", path.display()));
        }
    };
    if current.is_some_and(|current| normalize_newlines(&current) == normalize_newlines(contents)) {
        return Ok(FileStatus::UpToDate);
    }
    match mode {
        Mode::Check => Ok(FileStatus::Stale(format!(
            "{display_path} is not up to date: run `{fix_command}` and commit the result"
        ))),
        Mode::Write => {
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent)
                    .with_context(|| format!("cannot create {}", parent.display()))?;
            }
            fs::write(path, contents)
                .with_context(|| format!("cannot write {}", path.display()))?;
            Ok(FileStatus::Updated)
        }
    }
}

fn normalize_newlines(text: &str) -> String {
    text.replace("\r\n", "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_mode_reports_and_write_mode_fixes() {
        let dir = std::env::temp_dir().join(format!("xtask-ensure-{}", std::process::id()));
        let path = dir.join("generated.md");
        let check = |mode| ensure_file_contents(&path, "generated.md", "new\n", "regen", mode);

        let stale = check(Mode::Check).expect("a missing file is stale, not an error");
        assert_eq!(
            stale,
            FileStatus::Stale(
                "generated.md is not up to date: run `regen` and commit the result".to_owned()
            )
        );
        assert!(!path.exists(), "check mode must not write");

        assert_eq!(check(Mode::Write).expect("writes"), FileStatus::Updated);
        assert_eq!(check(Mode::Check).expect("reads"), FileStatus::UpToDate);

        fs::write(&path, "new\r\n").expect("writes a CRLF copy");
        assert_eq!(check(Mode::Check).expect("reads"), FileStatus::UpToDate);

        fs::remove_dir_all(&dir).expect("removes the temporary directory");
    }
}
