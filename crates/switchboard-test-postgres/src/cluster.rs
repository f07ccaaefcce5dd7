//! A throw-away PostgreSQL cluster: `initdb` in a fresh temporary directory, one server on a
//! free loopback port, stopped and deleted when the value drops.
//!
//! `cargo xtask test` starts one for the whole run and hands its URL to every test process;
//! a test that stops the server on purpose (a fault test) starts its own. The server runs as an
//! unprivileged user (the `postgres` system user when this process is root), listens on
//! 127.0.0.1 only and on a unix socket inside the temporary directory, and asks for a
//! password (SCRAM-SHA-256), so a test with a wrong password is refused as in production; the
//! superuser's secret takes one PBKDF2 iteration rather than 4096, so logging in costs a test
//! build nothing (see `scram`).
//!
//! The server is a child of this process, started without `pg_ctl` (which would detach it), so
//! Ctrl-C in a terminal reaches it too: SIGINT is PostgreSQL's fast shutdown, and an
//! interrupted run leaves no server behind.

use std::{
    fmt,
    fs::{self, OpenOptions},
    io::{Seek as _, SeekFrom},
    os::unix::{fs::MetadataExt as _, process::CommandExt as _},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use tempfile::TempDir;
use uuid::Uuid;

use crate::{
    ClusterError,
    binaries::{RunAs, run_as, server_bindir},
    scram,
};

/// The superuser `initdb` creates; tests log in as it.
pub const SUPERUSER: &str = "switchboard";

/// The address the server listens on, and nothing else.
pub const HOST: &str = "127.0.0.1";

/// How long a server may take to become ready (crash recovery after an immediate stop
/// included).
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How many free ports to try when another process takes the chosen one first.
const PORT_ATTEMPTS: u32 = 5;

/// Memory-backed, so a cluster never waits for the disk (other writers' dirty pages throttle
/// every writer): `CREATE DATABASE` there takes about a tenth of its time on a busy disk.
const SHARED_MEMORY_DIR: &str = "/dev/shm";

/// The room [`SHARED_MEMORY_DIR`] must have left for a cluster to go there (a cluster is about
/// 40 MB, each database about 8 MB, and `max_wal_size` bounds the WAL), in KiB.
const SHARED_MEMORY_MIN_KIB: u64 = 1024 * 1024;

/// Settings for tests, appended to `postgresql.conf`.
///
/// `fsync = off` and `full_page_writes = off` only matter when the operating system itself
/// crashes: a committed transaction's WAL is still written (to the page cache) before the
/// commit is acknowledged, so a server stopped with `pg_ctl stop -m immediate`, or killed,
/// recovers every committed transaction. `synchronous_commit` stays on for that reason: off,
/// a commit would be acknowledged before its WAL left the server's memory, and an immediate
/// stop could lose it.
///
/// `wal_level = minimal` (no replication here) makes `CREATE DATABASE`, which every test runs,
/// about three times faster: the new database's files are not copied through the WAL.
const SETTINGS: &str = "
# switchboard-test-postgres: a throw-away cluster for tests.
listen_addresses = '127.0.0.1'
max_connections = 300
fsync = off
full_page_writes = off
synchronous_commit = on
wal_level = minimal
max_wal_senders = 0
max_wal_size = '256MB'
jit = off
lc_messages = 'C'
";

/// A running (or deliberately stopped) throw-away PostgreSQL cluster.
///
/// Dropping it stops the server (`pg_ctl stop -m fast`) and deletes the data directory.
pub struct TestCluster {
    /// Holds the data directory (`data/`), the socket directory (`socket/`) and the log.
    dir: TempDir,
    bindir: PathBuf,
    run_as: Option<RunAs>,
    port: u16,
    password: String,
    server: Option<Child>,
}

impl fmt::Debug for TestCluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestCluster")
            .field("dir", &self.dir.path())
            .field("bindir", &self.bindir)
            .field("port", &self.port)
            .field("running", &self.server.is_some())
            .finish_non_exhaustive()
    }
}

impl TestCluster {
    /// Creates a cluster in a fresh temporary directory and starts its server.
    ///
    /// # Errors
    /// [`ClusterError::BinariesMissing`] when PostgreSQL is not installed,
    /// [`ClusterError::NoPostgresUser`] as root without a `postgres` user, and the others
    /// when `initdb` or the server fails (with what it printed or logged).
    pub fn start() -> Result<Self, ClusterError> {
        let started = Instant::now();
        let bindir = server_bindir()?;
        let dir = tempfile::Builder::new()
            .prefix("switchboard-postgres-")
            .tempdir_in(parent_dir())
            .map_err(ClusterError::io("create a temporary directory"))?;
        let current_uid = fs::metadata(dir.path())
            .map_err(ClusterError::io("read the temporary directory's owner"))?
            .uid();
        let mut cluster = Self {
            dir,
            bindir,
            run_as: run_as(current_uid)?,
            port: 0,
            password: Uuid::new_v4().simple().to_string(),
            server: None,
        };
        cluster.init()?;
        let mut last_log = String::new();
        for _ in 0..PORT_ATTEMPTS {
            cluster.port = free_port()?;
            match cluster.spawn_server() {
                Ok(()) => {
                    tracing::info!(
                        port = cluster.port,
                        elapsed_ms = started.elapsed().as_millis(),
                        bindir = %cluster.bindir.display(),
                        "started a throw-away PostgreSQL cluster"
                    );
                    return Ok(cluster);
                }
                Err(Start::PortTaken(log)) => last_log = log,
                Err(Start::Failed(error)) => return Err(error),
            }
        }
        Err(ClusterError::NoFreePort {
            attempts: PORT_ATTEMPTS,
            log: last_log,
        })
    }

    /// `postgres://switchboard:PASSWORD@127.0.0.1:PORT/postgres`: the superuser on the
    /// `postgres` database.
    pub fn url(&self) -> String {
        self.url_for("postgres")
    }

    /// The superuser's URL for another database of this cluster.
    pub fn url_for(&self, database: &str) -> String {
        format!(
            "postgres://{SUPERUSER}:{}@{HOST}:{}/{database}",
            self.password, self.port
        )
    }

    /// The loopback port the server listens on (the same after [`Self::start_again`]).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The superuser's password, random for each cluster.
    pub fn password(&self) -> &str {
        &self.password
    }

    /// The data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The directory of the server's unix socket (`host=` for a socket connection).
    pub fn socket_dir(&self) -> PathBuf {
        self.dir.path().join("socket")
    }

    /// The directory PostgreSQL's programs were taken from (`/usr/lib/postgresql/15/bin`).
    pub fn bindir(&self) -> &Path {
        &self.bindir
    }

    /// Whether the server is running (it is, unless [`Self::stop_immediate`] stopped it).
    pub fn is_running(&self) -> bool {
        self.server.is_some()
    }

    /// Everything the server has logged, for a failing test's message.
    pub fn log(&self) -> String {
        fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// Stops the server at once, as a crash would: `pg_ctl stop -m immediate`. Committed
    /// transactions survive, and [`Self::start_again`] recovers them. Does nothing when the
    /// server is already stopped.
    ///
    /// # Errors
    /// When `pg_ctl` fails; the server is then killed.
    pub fn stop_immediate(&mut self) -> Result<(), ClusterError> {
        self.stop("immediate")
    }

    /// Starts the server again on the same data directory and port, after
    /// [`Self::stop_immediate`]; returns once crash recovery is done and it accepts
    /// connections. Does nothing when the server is running.
    ///
    /// # Errors
    /// When the server does not start (another process took the port meanwhile, for one).
    pub fn start_again(&mut self) -> Result<(), ClusterError> {
        if self.server.is_some() {
            return Ok(());
        }
        self.spawn_server().map_err(|error| match error {
            Start::Failed(error) => error,
            Start::PortTaken(log) => ClusterError::NoFreePort { attempts: 1, log },
        })
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// One of PostgreSQL's programs, run as the cluster's user in its directory.
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(self.bindir.join(program));
        command
            .current_dir(self.dir.path())
            .env("LC_ALL", "C")
            .stdin(Stdio::null());
        if let Some(RunAs { uid, gid }) = self.run_as {
            command.uid(uid).gid(gid);
        }
        command
    }

    /// Runs `initdb` and writes the test settings; the server user owns everything.
    fn init(&self) -> Result<(), ClusterError> {
        let socket_dir = self.socket_dir();
        fs::create_dir(&socket_dir).map_err(ClusterError::io("create the socket directory"))?;
        let password_file = self.dir.path().join("password");
        // initdb stores a secret in PostgreSQL's format as it is (see `scram`).
        let salt = *Uuid::new_v4().as_bytes();
        let secret = scram::secret(&self.password, &salt, scram::ITERATIONS);
        fs::write(&password_file, secret)
            .map_err(ClusterError::io("write the password file for initdb"))?;
        if let Some(RunAs { uid, gid }) = self.run_as {
            for path in [self.dir.path(), &socket_dir, &password_file] {
                std::os::unix::fs::chown(path, Some(uid), Some(gid)).map_err(ClusterError::io(
                    format!("give {} to the postgres user (uid {uid})", path.display()),
                ))?;
            }
        }
        let mut initdb = self.command("initdb");
        initdb
            .arg("--pgdata")
            .arg(self.data_dir())
            .arg(format!("--username={SUPERUSER}"))
            .arg(format!("--pwfile={}", password_file.display()))
            .args([
                "--auth=scram-sha-256",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
                "--no-instructions",
            ]);
        run(&mut initdb, "initdb")?;
        fs::remove_file(&password_file).map_err(ClusterError::io("remove the password file"))?;
        let conf_path = self.data_dir().join("postgresql.conf");
        let mut conf = OpenOptions::new()
            .append(true)
            .open(&conf_path)
            .map_err(ClusterError::io(format!("open {}", conf_path.display())))?;
        let socket = socket_dir.display().to_string().replace('\'', "''");
        let settings = format!("{SETTINGS}unix_socket_directories = '{socket}'\n");
        std::io::Write::write_all(&mut conf, settings.as_bytes())
            .map_err(ClusterError::io(format!("write {}", conf_path.display())))
    }

    /// Starts `postgres` on `self.port` and waits until it is ready.
    fn spawn_server(&mut self) -> Result<(), Start> {
        let log_path = self.log_path();
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|error| Start::Failed(ClusterError::io("open the server log")(error)))?;
        let log_start = log
            .seek(SeekFrom::End(0))
            .map_err(|error| Start::Failed(ClusterError::io("seek the server log")(error)))?;
        let stderr = log
            .try_clone()
            .map_err(|error| Start::Failed(ClusterError::io("share the server log")(error)))?;
        let mut child = self
            .command("postgres")
            .arg("-D")
            .arg(self.data_dir())
            .arg("-p")
            .arg(self.port.to_string())
            .stdout(log)
            .stderr(stderr)
            .spawn()
            .map_err(|error| Start::Failed(ClusterError::io("start postgres")(error)))?;
        let pid_file = self.data_dir().join("postmaster.pid");
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            match child.try_wait() {
                Ok(Some(status)) => {
                    let log = read_from(&log_path, log_start);
                    return Err(if log.contains("Address already in use") {
                        Start::PortTaken(log)
                    } else {
                        Start::Failed(ClusterError::Exited { status, log })
                    });
                }
                Ok(None) => {}
                Err(error) => {
                    kill(&mut child);
                    return Err(Start::Failed(ClusterError::io("watch postgres")(error)));
                }
            }
            if is_ready(&pid_file, child.id()) {
                self.server = Some(child);
                return Ok(());
            }
            if Instant::now() > deadline {
                kill(&mut child);
                return Err(Start::Failed(ClusterError::NotReady {
                    seconds: START_TIMEOUT.as_secs(),
                    log: read_from(&log_path, log_start),
                }));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// `pg_ctl stop -m <mode>`, then reaps the server; kills it if `pg_ctl` fails.
    fn stop(&mut self, mode: &str) -> Result<(), ClusterError> {
        let Some(mut child) = self.server.take() else {
            return Ok(());
        };
        // Ctrl-C in a terminal reaches the server too, which then shuts down by itself.
        if let Ok(Some(status)) = child.try_wait() {
            tracing::debug!(%status, "the PostgreSQL server had already exited");
            return Ok(());
        }
        let mut pg_ctl = self.command("pg_ctl");
        pg_ctl
            .arg("stop")
            .arg("-D")
            .arg(self.data_dir())
            .args(["-m", mode, "-t", "60", "-s"]);
        let stopped = run(&mut pg_ctl, &format!("pg_ctl stop -m {mode}"));
        if stopped.is_err() {
            kill(&mut child);
        } else if let Err(error) = child.wait() {
            tracing::warn!(%error, "cannot reap the stopped PostgreSQL server");
        }
        stopped
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        if let Err(error) = self.stop("fast") {
            tracing::warn!(%error, "cannot stop the throw-away PostgreSQL cluster");
        }
    }
}

/// Why one attempt to start the server failed.
enum Start {
    /// Another process bound the port first; the log says so.
    PortTaken(String),
    Failed(ClusterError),
}

/// Where the temporary directory goes: [`SHARED_MEMORY_DIR`] when it has room, else the
/// system's temporary directory.
fn parent_dir() -> PathBuf {
    let available_kib = Command::new("df")
        .args(["-Pk", SHARED_MEMORY_DIR])
        .output()
        .ok()
        .filter(|output| output.status.success())
        .and_then(|output| df_available_kib(&String::from_utf8_lossy(&output.stdout)));
    if available_kib.is_some_and(|kib| kib >= SHARED_MEMORY_MIN_KIB) {
        PathBuf::from(SHARED_MEMORY_DIR)
    } else {
        std::env::temp_dir()
    }
}

/// The "Available" column of `df -Pk`'s one line.
fn df_available_kib(output: &str) -> Option<u64> {
    output
        .lines()
        .nth(1)?
        .split_whitespace()
        .nth(3)?
        .parse()
        .ok()
}

/// A loopback port that is free now (the server binds it a moment later).
fn free_port() -> Result<u16, ClusterError> {
    let listener = std::net::TcpListener::bind((HOST, 0))
        .map_err(ClusterError::io("find a free loopback port"))?;
    let address = listener
        .local_addr()
        .map_err(ClusterError::io("find a free loopback port"))?;
    Ok(address.port())
}

/// Whether `postmaster.pid` names `pid` and says `ready` (what `pg_ctl start -w` waits for).
fn is_ready(pid_file: &Path, pid: u32) -> bool {
    let Ok(text) = fs::read_to_string(pid_file) else {
        return false;
    };
    let lines: Vec<&str> = text.lines().collect();
    lines.first().map(|line| line.trim()) == Some(pid.to_string().as_str())
        && lines.get(7).map(|line| line.trim()) == Some("ready")
}

/// Runs a program to completion; fails with what it printed unless it succeeds.
fn run(command: &mut Command, what: &str) -> Result<(), ClusterError> {
    let output = command
        .output()
        .map_err(ClusterError::io(format!("run {what}")))?;
    if output.status.success() {
        return Ok(());
    }
    let mut printed = String::from_utf8_lossy(&output.stdout).into_owned();
    printed.push_str(&String::from_utf8_lossy(&output.stderr));
    Err(ClusterError::CommandFailed {
        command: what.to_owned(),
        status: output.status,
        output: printed,
    })
}

/// The log from byte `offset` on (what one start wrote).
fn read_from(path: &Path, offset: u64) -> String {
    let bytes = fs::read(path).unwrap_or_default();
    let start = usize::try_from(offset)
        .unwrap_or(usize::MAX)
        .min(bytes.len());
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}

fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn df_says_how_much_room_is_left() {
        let output = "Filesystem     1024-blocks  Used Available Capacity Mounted on\n\
                      tmpfs             24684092  2212  24681880       1% /dev/shm\n";
        assert_eq!(df_available_kib(output), Some(24_681_880));
        assert_eq!(df_available_kib("Filesystem\n"), None);
    }

    #[test]
    fn a_pid_file_is_ready_only_for_its_own_server_once_it_says_so() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let pid_file = dir.path().join("postmaster.pid");
        let write = |status: &str| {
            fs::write(
                &pid_file,
                format!("42\n/data\n1700000000\n5432\n/sock\n127.0.0.1\n  1234  5678\n{status}\n"),
            )
            .expect("a pid file");
        };
        write("starting");
        assert!(!is_ready(&pid_file, 42));
        write("ready   ");
        assert!(is_ready(&pid_file, 42));
        assert!(!is_ready(&pid_file, 43));
        assert!(!is_ready(&dir.path().join("missing"), 42));
    }
}
