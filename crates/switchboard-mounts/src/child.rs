//! How a stdio server's child process is started: found first (a missing program is a clear
//! error, not a failed handshake), in a process group of its own, and tied to Switchboard's
//! life.
//!
//! **Tied to our life.** A child must not outlive Switchboard, even when Switchboard is killed
//! with SIGKILL and runs no cleanup. Linux's parent-death signal does that: the kernel sends
//! the child SIGKILL when its parent dies. Setting it needs `prctl` in the child between fork
//! and exec, which in Rust takes `unsafe` `pre_exec` code (forbidden in this workspace) or a
//! program that sets it and then execs the server: util-linux's `setpriv --pdeathsig KILL --`
//! (util-linux is essential on Debian, so `setpriv` is there). The setting survives `exec`,
//! so the server itself is the process that carries it. Where `setpriv` is missing (not
//! Linux), the child is started without it and a warning says so once; closing Switchboard
//! normally still ends every child.
//!
//! The signal comes when the *thread* that spawned the child ends, not the process. Servers
//! are spawned from the runtime's worker threads or the thread blocking on it, which live as
//! long as the runtime.

use std::{
    collections::BTreeMap,
    ffi::OsString,
    path::{Path, PathBuf},
    sync::OnceLock,
};

use process_wrap::tokio::{CommandWrap, ProcessGroup};

/// `setpriv`, if this machine has it.
fn setpriv() -> Option<&'static Path> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let found = find_on_path("setpriv", std::env::var_os("PATH"));
            if found.is_none() {
                tracing::warn!(
                    "`setpriv` (util-linux) is not on PATH: mounted stdio servers are started \
                     without a parent-death signal, so one could outlive Switchboard if it is \
                     killed with SIGKILL"
                );
            }
            found
        })
        .as_deref()
}

/// The file `program` names: itself when it has a `/` (relative to `cwd`), else the first
/// executable of that name on `path`.
pub(crate) fn resolve(
    program: &str,
    cwd: Option<&Path>,
    env: &BTreeMap<String, String>,
) -> Result<PathBuf, std::io::Error> {
    if program.contains('/') {
        let path = match cwd {
            Some(cwd) if Path::new(program).is_relative() => cwd.join(program),
            _ => PathBuf::from(program),
        };
        return if is_executable(&path) {
            Ok(path)
        } else {
            Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("{} is not an executable file", path.display()),
            ))
        };
    }
    let path = env
        .get("PATH")
        .map(OsString::from)
        .or_else(|| std::env::var_os("PATH"));
    find_on_path(program, path).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("`{program}` is not on PATH"),
        )
    })
}

fn find_on_path(program: &str, path: Option<OsString>) -> Option<PathBuf> {
    std::env::split_paths(&path?)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    path.metadata()
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// The command that starts `program` with `args`: in a process group of its own, with the
/// parent-death signal set where `setpriv` is available.
pub(crate) fn command(
    program: &Path,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&Path>,
) -> CommandWrap {
    let build = |built: &mut tokio::process::Command| {
        built.envs(env);
        if let Some(cwd) = cwd {
            built.current_dir(cwd);
        }
    };
    let mut wrapped = match setpriv() {
        Some(setpriv) => CommandWrap::with_new(setpriv, |built| {
            built
                .args(["--pdeathsig", "KILL", "--"])
                .arg(program)
                .args(args);
            build(built);
        }),
        None => CommandWrap::with_new(program, |built| {
            built.args(args);
            build(built);
        }),
    };
    wrapped.wrap(ProcessGroup::leader());
    wrapped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_on_path_or_refused_clearly() {
        let env = BTreeMap::new();
        let sh = resolve("sh", None, &env).expect("sh is on PATH");
        assert!(sh.is_absolute(), "{}", sh.display());
        let missing = resolve("no-such-program-anywhere", None, &env).expect_err("missing");
        assert!(missing.to_string().contains("not on PATH"), "{missing}");
        let plain = std::env::temp_dir().join(format!("switchboard-plain-{}", std::process::id()));
        std::fs::write(&plain, "not a program").expect("a plain file");
        let not_executable =
            resolve(&plain.display().to_string(), None, &env).expect_err("not executable");
        let _ = std::fs::remove_file(&plain);
        assert!(
            not_executable
                .to_string()
                .contains("not an executable file")
        );
        let relative = resolve("./sh", Some(Path::new("/bin")), &env).expect("relative to cwd");
        assert_eq!(relative, Path::new("/bin/./sh"));
    }

    #[test]
    fn the_configured_path_wins() {
        let env = BTreeMap::from([("PATH".to_owned(), "/nonexistent".to_owned())]);
        assert!(resolve("sh", None, &env).is_err());
    }
}
