//! MCP in, MCP out: an rmcp client calling the mounted `echo` through the real `switchboard
//! serve` binary (started with `--mounts`, every check and audit on), beside the same client
//! calling the server directly.
//!
//! - stdio: the client starts `switchboard serve --stdio --mounts FILE`, which starts the echo
//!   server as its child; the baseline client starts the echo server itself. One pipe hop more
//!   through Switchboard, as a user who mounts a server gets. For scale, in the same rounds, a
//!   plain rmcp proxy (`proxy.rs`) in front of the same server: the second hop and nothing
//!   else, the least any MCP-in, MCP-out server adds.
//! - streamable HTTP: the client connects to `switchboard serve --http 127.0.0.1:0 --mounts
//!   FILE` (the echo server still its stdio child); the baseline client connects to the echo
//!   server served on streamable HTTP itself (rmcp's default configuration for the tiny server,
//!   server-everything's own `streamableHttp` mode). Both clients speak 2025-11-25 (sessions).

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, Instant},
};

use rmcp::{
    ServiceExt as _,
    transport::{
        StreamableHttpClientTransport, TokioChildProcess,
        streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use tokio::{
    io::{AsyncBufReadExt as _, BufReader},
    process::{Child, Command},
};

use crate::{
    Client, Plan, bounded, call_direct, direct_client,
    echo::{self, EchoServer, Launch, SERVER_ID, TOOL},
    interleaved, interleaved3, proxy,
    stats::{Series, added, human, print_headline},
};

/// What switchboard may add, median: well under the 50 µs a published proxy benchmark adds.
const TARGET_ADDED_NS: f64 = 50_000.0;

/// How long a server may take to announce its address.
const START_TIMEOUT: Duration = Duration::from_secs(60);

pub(crate) async fn run(server: EchoServer, launch: &Launch, plan: Plan) {
    let switchboard = switchboard_binary();
    let mounts_file = MountsFile::write(launch);
    let name = switchboard_mounts::mounted_name(SERVER_ID, TOOL);

    let through = bounded(
        "starting switchboard serve --stdio",
        Box::pin(
            ().serve(
                TokioChildProcess::new(serve(&switchboard, &mounts_file.path, &["--stdio"]))
                    .expect("switchboard starts"),
            ),
        ),
    )
    .await
    .expect("switchboard serve --stdio initializes");
    let direct = direct_client(launch).await;
    let proxy = bounded(
        "starting the plain proxy",
        Box::pin(
            ().serve(TokioChildProcess::new(proxy::command(launch)).expect("the proxy starts")),
        ),
    )
    .await
    .expect("the plain proxy initializes");
    let [figure, baseline, floor] = interleaved3(
        plan,
        async || {
            std::hint::black_box(call_direct(&through, &name).await);
        },
        async || {
            std::hint::black_box(call_direct(&direct, TOOL).await);
        },
        async || {
            std::hint::black_box(call_direct(&proxy, TOOL).await);
        },
    )
    .await;
    report("stdio", "mounts.serve_stdio", plan, &figure, &baseline);
    println!(
        "  for scale, a plain rmcp proxy (the second hop and nothing else): median {}, p99 {}: \
         adds {} to the server directly; switchboard serve adds {} to it (round by round {})",
        human(floor.median()),
        human(floor.p99()),
        added(floor.median() - baseline.median()),
        added(figure.median() - floor.median()),
        added(figure.paired_difference_ns(&floor)),
    );
    let _ = through.cancel().await;
    let _ = proxy.cancel().await;
    let _ = direct.cancel().await;

    let mut switchboard_http = HttpServer::switchboard(&switchboard, &mounts_file.path).await;
    let mut echo_http = HttpServer::echo(server, launch).await;
    let through = http_client(&switchboard_http.url).await;
    let direct = http_client(&echo_http.url).await;
    let (figure, baseline) = interleaved(
        plan,
        async || {
            std::hint::black_box(call_direct(&through, &name).await);
        },
        async || {
            std::hint::black_box(call_direct(&direct, TOOL).await);
        },
    )
    .await;
    report(
        "streamable HTTP",
        "mounts.serve_http",
        plan,
        &figure,
        &baseline,
    );
    let _ = through.cancel().await;
    let _ = direct.cancel().await;
    switchboard_http.stop().await;
    echo_http.stop().await;
}

fn report(transport: &str, id: &str, plan: Plan, figure: &Series, baseline: &Series) {
    let added_median = figure.median() - baseline.median();
    println!();
    println!(
        "MCP in, MCP out over {transport}, {} rounds of {} calls each, interleaved:",
        plan.rounds, plan.calls
    );
    println!(
        "  through switchboard serve       median {:>10}  p99 {:>10}",
        human(figure.median()),
        human(figure.p99())
    );
    println!(
        "  the server directly             median {:>10}  p99 {:>10}",
        human(baseline.median()),
        human(baseline.p99())
    );
    println!(
        "  added: median {}, p99 {}, round by round {} (target: median adds < {}): {}",
        added(added_median),
        added(figure.p99() - baseline.p99()),
        added(figure.paired_difference_ns(baseline)),
        human(TARGET_ADDED_NS),
        if added_median < TARGET_ADDED_NS {
            "met"
        } else {
            "NOT met"
        }
    );
    print_headline(id, figure.median(), baseline.median());
    print_headline(&format!("{id}_p99"), figure.p99(), baseline.p99());
}

/// `switchboard serve` with `mode` (`--stdio`, or `--http ADDR`), mounting `mounts_file`
/// strictly, as alice, an acme admin; the environment's own Switchboard settings removed. Its
/// audit records, proposals and keys are kept in memory (`--audit memory --approvals memory`:
/// the bench measures the call path, not a store), and its workflow runs in a temporary state
/// directory, never the user's.
fn serve(switchboard: &Path, mounts_file: &Path, mode: &[&str]) -> Command {
    let mut command = Command::new(switchboard);
    command
        .arg("serve")
        .args(mode)
        .arg("--mounts")
        .arg(mounts_file)
        .args(["--mounts-strict", "--org", "acme", "--user", "alice"])
        .args(["--role", "admin"])
        .args(["--audit", "memory", "--approvals", "memory"])
        .arg("--state-dir")
        .arg(std::env::temp_dir().join(format!(
            "switchboard-mounts-bench-state-{}",
            std::process::id()
        )));
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("SWITCHBOARD_") {
            command.env_remove(&name);
        }
    }
    command.env_remove("RUST_LOG");
    command
}

async fn http_client(url: &str) -> Client {
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    let transport = StreamableHttpClientTransport::from_config(config);
    bounded("an HTTP handshake", Box::pin(().serve(transport)))
        .await
        .expect("the HTTP client connects")
}

/// A mounts file in the temporary folder, removed on drop.
struct MountsFile {
    path: PathBuf,
}

impl MountsFile {
    fn write(launch: &Launch) -> Self {
        let path = std::env::temp_dir().join(format!(
            "switchboard-mounts-bench-{}.toml",
            std::process::id()
        ));
        std::fs::write(&path, launch.mounts_toml()).expect("the mounts file is written");
        Self { path }
    }
}

impl Drop for MountsFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A server on streamable HTTP in a child process, killed on drop.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    /// `switchboard serve --http` on a free loopback port, mounting `mounts_file`.
    async fn switchboard(switchboard: &Path, mounts_file: &Path) -> Self {
        let mut command = serve(switchboard, mounts_file, &["--http", "127.0.0.1:0"]);
        command.stderr(Stdio::piped());
        Self::start(command, true, |line| {
            let address = line.split("http://").nth(1)?.split(' ').next()?;
            Some(format!("http://{address}"))
        })
        .await
    }

    /// The echo server on streamable HTTP.
    async fn echo(server: EchoServer, launch: &Launch) -> Self {
        match server {
            EchoServer::Tiny => {
                let mut command = launch.command();
                command.env(echo::CHILD_ENV, "http").stdout(Stdio::piped());
                Self::start(command, false, |line| {
                    line.strip_prefix("listening on ").map(str::to_owned)
                })
                .await
            }
            EchoServer::Everything => {
                let port = std::net::TcpListener::bind("127.0.0.1:0")
                    .and_then(|listener| listener.local_addr())
                    .map(|address| address.port())
                    .expect("a free port");
                let mut command = launch.command();
                command
                    .arg("streamableHttp")
                    .env("PORT", port.to_string())
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .kill_on_drop(true);
                let child = command.spawn().expect("server-everything starts");
                // It announces itself on either stream; a port that accepts is the sure sign.
                tokio::time::timeout(START_TIMEOUT, async {
                    while tokio::net::TcpStream::connect(("127.0.0.1", port))
                        .await
                        .is_err()
                    {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                })
                .await
                .expect("server-everything listens in time");
                Self {
                    child,
                    url: format!("http://127.0.0.1:{port}/mcp"),
                }
            }
        }
    }

    /// Starts `command` and reads its stderr (or stdout) until `announced` finds the URL.
    async fn start(
        mut command: Command,
        on_stderr: bool,
        announced: impl Fn(&str) -> Option<String>,
    ) -> Self {
        command.stdin(Stdio::null()).kill_on_drop(true);
        let mut child = command.spawn().expect("the HTTP server starts");
        let stream: Box<dyn tokio::io::AsyncRead + Unpin + Send> = if on_stderr {
            Box::new(child.stderr.take().expect("piped stderr"))
        } else {
            Box::new(child.stdout.take().expect("piped stdout"))
        };
        let mut lines = BufReader::new(stream).lines();
        let started = Instant::now();
        let url = loop {
            let remaining = START_TIMEOUT.saturating_sub(started.elapsed());
            let line = tokio::time::timeout(remaining, lines.next_line())
                .await
                .expect("the HTTP server announces its address in time")
                .expect("its output is readable")
                .expect("the HTTP server exits before announcing its address");
            if let Some(url) = announced(&line) {
                break url;
            }
        };
        // Keep reading, so that a chatty server never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self { child, url }
    }

    async fn stop(&mut self) {
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(START_TIMEOUT, self.child.wait()).await;
    }
}

/// The `switchboard` binary, built with this benchmark's profile.
///
/// Cargo gives benchmarks no `CARGO_BIN_EXE_*` of another package, so: `SWITCHBOARD_BIN` if
/// set; otherwise `cargo build -p switchboard-cli --bin switchboard` with this benchmark's
/// profile and target directory (a no-op when it is up to date), and the binary next to this
/// benchmark's `deps/` folder.
fn switchboard_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("SWITCHBOARD_BIN") {
        return PathBuf::from(path);
    }
    let this = std::env::current_exe().expect("the benchmark's own path");
    // <target>/<profile dir>/deps/mounted-<hash>
    let profile_dir = this
        .parent()
        .and_then(Path::parent)
        .expect("the benchmark runs from <target>/<profile>/deps");
    let target_dir = profile_dir
        .parent()
        .expect("the profile directory is inside the target directory");
    let profile = match profile_dir.file_name().and_then(|name| name.to_str()) {
        Some("release") | None => "bench",
        Some("debug") => "dev",
        Some(other) => other,
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args(["build", "--profile", profile, "-p", "switchboard-cli"])
        .args(["--bin", "switchboard"])
        .env("CARGO_TARGET_DIR", target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("cargo runs");
    assert!(
        status.success(),
        "building the switchboard binary failed; build it yourself and set SWITCHBOARD_BIN"
    );
    let binary = profile_dir.join(format!("switchboard{}", std::env::consts::EXE_SUFFIX));
    assert!(
        binary.is_file(),
        "no switchboard binary at {}; set SWITCHBOARD_BIN",
        binary.display()
    );
    binary
}
