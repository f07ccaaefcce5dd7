//! Where PostgreSQL's server programs are, and which user runs them.
//!
//! Debian installs each major version's `initdb`, `postgres` and `pg_ctl` in
//! `/usr/lib/postgresql/<version>/bin`, off `PATH`; other systems have `pg_config --bindir`.
//! PostgreSQL refuses to run as root, so a root process (CI runs as root) runs them as the
//! `postgres` system user that Debian's package creates.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use crate::ClusterError;

/// The programs a cluster needs, all in one directory.
const PROGRAMS: [&str; 3] = ["initdb", "postgres", "pg_ctl"];

/// Where Debian installs each major version's programs (`<version>/bin`).
const DEBIAN_ROOT: &str = "/usr/lib/postgresql";

/// The directory of PostgreSQL's server programs: the highest version under
/// `/usr/lib/postgresql/*/bin`, else `pg_config --bindir`.
///
/// # Errors
/// [`ClusterError::BinariesMissing`] when neither has `initdb`, `postgres` and `pg_ctl`.
pub fn server_bindir() -> Result<PathBuf, ClusterError> {
    if let Some(dir) = highest_debian_bindir(Path::new(DEBIAN_ROOT)) {
        return Ok(dir);
    }
    Command::new("pg_config")
        .arg("--bindir")
        .output()
        .ok()
        .filter(|output| output.status.success())
        .and_then(|output| String::from_utf8(output.stdout).ok())
        .map(|dir| PathBuf::from(dir.trim()))
        .filter(|dir| has_programs(dir))
        .ok_or(ClusterError::BinariesMissing)
}

/// The `bin` directory of the highest major version under `root` that has every program.
fn highest_debian_bindir(root: &Path) -> Option<PathBuf> {
    let entries = std::fs::read_dir(root).ok()?;
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let version = version_key(&entry.file_name().to_string_lossy())?;
            let bin = entry.path().join("bin");
            has_programs(&bin).then_some((version, bin))
        })
        .max_by(|left, right| left.0.cmp(&right.0))
        .map(|(_, bin)| bin)
}

/// `"15"` → `[15]`, `"9.6"` → `[9, 6]`; `None` for a name that is no version.
fn version_key(name: &str) -> Option<Vec<u32>> {
    name.split('.').map(|part| part.parse().ok()).collect()
}

fn has_programs(dir: &Path) -> bool {
    PROGRAMS.iter().all(|program| dir.join(program).is_file())
}

/// The user and group the server programs run as, when not the current ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RunAs {
    pub(crate) uid: u32,
    pub(crate) gid: u32,
}

/// Whom to run the programs as: nobody else for an ordinary user, the `postgres` system user
/// for root (`current_uid` is the owner of a directory the process has just created).
pub(crate) fn run_as(current_uid: u32) -> Result<Option<RunAs>, ClusterError> {
    if current_uid != 0 {
        return Ok(None);
    }
    let id = |flag: &str| -> Option<u32> {
        let output = Command::new("id").args([flag, "postgres"]).output().ok()?;
        if !output.status.success() {
            return None;
        }
        String::from_utf8(output.stdout).ok()?.trim().parse().ok()
    };
    match (id("-u"), id("-g")) {
        (Some(uid), Some(gid)) if uid != 0 => Ok(Some(RunAs { uid, gid })),
        _ => Err(ClusterError::NoPostgresUser),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_as_numbers() {
        assert!(version_key("10") > version_key("9.6"));
        assert!(version_key("15") > version_key("9"));
        assert_eq!(version_key("main"), None);
    }

    #[test]
    fn the_highest_version_with_every_program_wins() {
        let root = tempfile::tempdir().expect("a temporary directory");
        let make = |version: &str, programs: &[&str]| {
            let bin = root.path().join(version).join("bin");
            std::fs::create_dir_all(&bin).expect("a bin directory");
            for program in programs {
                std::fs::write(bin.join(program), "").expect("a program file");
            }
        };
        make("9.6", &PROGRAMS);
        make("15", &PROGRAMS);
        make("16", &["initdb"]);
        make("common", &PROGRAMS);
        assert_eq!(
            highest_debian_bindir(root.path()),
            Some(root.path().join("15/bin"))
        );
    }

    #[test]
    fn an_ordinary_user_runs_the_programs_itself() {
        assert_eq!(run_as(1000).expect("no lookup for a non-root user"), None);
    }
}
