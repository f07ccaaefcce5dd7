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
//!
//! **Ended as a whole.** A server's instance is its process group, not only the process
//! started here: `npx`, `uv run` or `sh -c` start the real server as a child of theirs, in the
//! same group, holding the same pipes. [`ServerProcesses::end`] is the one way an instance
//! ends (on restart, on close, after a failed start): SIGTERM to the whole group, up to
//! [`END_GRACE`] for it to exit, then SIGKILL to the whole group, and the started process
//! reaped. Processes that outlived it were handed to the init process, which reaps them.

use std::{
    collections::BTreeMap,
    ffi::OsString,
    path::{Path, PathBuf},
    process::{ExitStatus, Stdio},
    sync::OnceLock,
    time::Duration,
};

use nix::{errno::Errno, sys::signal::Signal, unistd::Pid};
use process_wrap::tokio::{ChildWrapper, CommandWrap, ProcessGroup};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

/// How long a server's process group has to exit after SIGTERM before it gets SIGKILL.
pub(crate) const END_GRACE: Duration = Duration::from_secs(2);

/// How long the started process is waited for after SIGKILL, to reap it.
const REAP_WAIT: Duration = Duration::from_secs(1);

/// How often an ending group is looked at.
const POLL: Duration = Duration::from_millis(20);

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

/// A started stdio server and its pipes.
pub(crate) struct Spawned {
    pub(crate) processes: ServerProcesses,
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: ChildStdout,
    pub(crate) stderr: Option<ChildStderr>,
}

/// Starts server `server`'s `command` (see [`command`]) with its stdin, stdout and stderr piped
/// to us.
pub(crate) fn spawn(server: &str, mut command: CommandWrap) -> std::io::Result<Spawned> {
    command
        .command_mut()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn()?;
    let pid = child
        .id()
        .ok_or_else(|| std::io::Error::other("the started process has no id"))?;
    let leader = i32::try_from(pid)
        .map(Pid::from_raw)
        .map_err(|_| std::io::Error::other(format!("process id {pid} is out of range")))?;
    let stdin = child.stdin().take();
    let stdout = child.stdout().take();
    let stderr = child.stderr().take();
    let processes = ServerProcesses {
        server: server.to_owned(),
        child,
        pid,
        group: leader,
        ended: false,
    };
    match (stdin, stdout) {
        (Some(stdin), Some(stdout)) => Ok(Spawned {
            processes,
            stdin,
            stdout,
            stderr,
        }),
        // Dropping `processes` kills the group.
        _ => Err(std::io::Error::other(
            "the started process's pipes are missing",
        )),
    }
}

/// A started stdio server's processes: the process started here, the leader of a process group
/// of its own, and whatever it started in that group.
///
/// Dropped without [`ServerProcesses::end`], the group gets SIGKILL at once.
#[derive(Debug)]
pub(crate) struct ServerProcesses {
    server: String,
    /// The started process, wrapped by process-wrap's `ProcessGroup`: its signals go to the
    /// whole group, and waiting for it reaps it.
    child: Box<dyn ChildWrapper>,
    pid: u32,
    group: Pid,
    ended: bool,
}

impl ServerProcesses {
    /// The started process's id, which is also its group's id.
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// Waits until the started process exits, and reaps it. Cancel-safe.
    pub(crate) async fn exited(&mut self) -> std::io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// Ends the whole group: SIGTERM to every process in it, up to [`END_GRACE`] for them to
    /// exit, then SIGKILL to every one left; the started process is reaped. Logs what it ended.
    pub(crate) async fn end(mut self) {
        self.ended = true;
        let (server, pgid) = (self.server.clone(), self.pid);
        if !self.group_alive() {
            tracing::debug!(server = %server, pgid, "the mounted server's process group had already exited");
            return;
        }
        if let Err(error) = self.child.signal(Signal::SIGTERM as i32) {
            tracing::debug!(server = %server, pgid, %error, "SIGTERM to the mounted server's process group failed");
        }
        if self.until_gone(END_GRACE).await {
            tracing::info!(server = %server, pgid, leader = %self.leader_status(), "the mounted server's process group ended on SIGTERM");
            return;
        }
        if let Err(error) = self.child.start_kill() {
            tracing::warn!(server = %server, pgid, %error, "SIGKILL to the mounted server's process group failed");
        }
        if tokio::time::timeout(REAP_WAIT, self.child.wait())
            .await
            .is_err()
        {
            tracing::warn!(server = %server, pgid, "the mounted server's process did not exit after SIGKILL");
        }
        tracing::warn!(server = %server, pgid, grace = ?END_GRACE, leader = %self.leader_status(), "the mounted server's process group did not end on SIGTERM; it was killed with SIGKILL");
    }

    /// Waits up to `within` until no process of the group is left; answers whether none is.
    async fn until_gone(&mut self, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if !self.group_alive() {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Whether a process of the group is left that has not exited, once the started process
    /// is reaped if it has exited.
    fn group_alive(&mut self) -> bool {
        let _ = self.child.try_wait();
        group_has_live_process(self.group)
    }

    /// How the started process exited (`exit status: 0`, `signal: 15 (SIGTERM)`), or that it
    /// has not.
    fn leader_status(&mut self) -> String {
        match self.child.try_wait() {
            Ok(Some(status)) => status.to_string(),
            Ok(None) => "running".to_owned(),
            Err(error) => format!("unknown ({error})"),
        }
    }
}

/// Whether process group `group` has a process that has not exited. `killpg` with no signal
/// finds the group while any process of it is left, zombies included; where `/proc` lists the
/// processes (Linux), zombies are told apart there: a process that outlived the one started
/// here is the init process's to reap, and may stay a zombie for a while.
fn group_has_live_process(group: Pid) -> bool {
    if matches!(nix::sys::signal::killpg(group, None), Err(Errno::ESRCH)) {
        return false;
    }
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return true;
    };
    processes.flatten().any(|process| {
        std::fs::read_to_string(process.path().join("stat"))
            .ok()
            .and_then(|stat| state_and_group(&stat))
            .is_some_and(|(state, of)| of == group.as_raw() && !matches!(state, 'Z' | 'X'))
    })
}

/// The state and process group of a `/proc/{pid}/stat` line: `pid (name) state ppid pgrp ...`,
/// where the name may hold spaces and parentheses.
fn state_and_group(stat: &str) -> Option<(char, i32)> {
    let (_, after_name) = stat.rsplit_once(')')?;
    let mut fields = after_name.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let group = fields.nth(1)?.parse().ok()?;
    Some((state, group))
}

impl Drop for ServerProcesses {
    fn drop(&mut self) {
        if !self.ended && self.group_alive() {
            tracing::warn!(server = %self.server, pgid = self.pid, "a mounted server's process group was dropped without being ended; killing it");
            let _ = self.child.start_kill();
        }
    }
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
    fn a_stat_line_gives_its_state_and_group_whatever_the_name() {
        assert_eq!(
            state_and_group("4242 (node) S 1 4200 4200 0 -1 4194560"),
            Some(('S', 4200))
        );
        assert_eq!(
            state_and_group("17 (a (b) c) Z 1 9 9 0"),
            Some(('Z', 9)),
            "the name ends at the last parenthesis"
        );
        assert_eq!(state_and_group("17 (cut"), None);
        assert_eq!(state_and_group("17 (x) R 1"), None);
    }

    #[test]
    fn the_configured_path_wins() {
        let env = BTreeMap::from([("PATH".to_owned(), "/nonexistent".to_owned())]);
        assert!(resolve("sh", None, &env).is_err());
    }
}
