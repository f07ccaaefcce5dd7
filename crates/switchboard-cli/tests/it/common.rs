//! What the tests that run the built `switchboard` binary share: a bound on every wait, the
//! command with nothing inherited from the environment that could change what it does, and
//! the handling of its processes (their exit, their standard error's lines).

use std::{
    future::Future,
    process::{ExitStatus, Stdio},
    time::Duration,
};

use tokio::{
    io::{AsyncBufRead, AsyncBufReadExt as _, BufReader, Lines},
    process::ChildStderr,
};

/// The identity flags of alice, an acme admin.
pub(crate) const ACME_ADMIN: [&str; 6] = ["--org", "acme", "--user", "alice", "--role", "admin"];

/// mark, acme's manager: decides acme's proposals.
pub(crate) const MARK: [&str; 6] = ["--org", "acme", "--user", "mark", "--role", "manager"];

/// sam of acme, as an agent whose changes become proposals.
pub(crate) const SAM_AGENT: [&str; 10] = [
    "--org",
    "acme",
    "--user",
    "sam",
    "--role",
    "staff",
    "--initiator",
    "agent",
    "--agent-mutations",
    "propose",
];

/// The longest any single step may take; a hang fails the test instead of stalling CI.
pub(crate) const LIMIT: Duration = Duration::from_secs(60);

/// Waits for `future`, failing the test with `what` if it takes longer than [`LIMIT`].
pub(crate) async fn bounded<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, future)
        .await
        .unwrap_or_else(|_| panic!("{what} took longer than {LIMIT:?}"))
}

/// Waits for `child` to exit, failing the test with `what` if it takes longer than [`LIMIT`].
pub(crate) async fn exit_of(what: &str, child: &mut tokio::process::Child) -> ExitStatus {
    bounded(what, child.wait())
        .await
        .unwrap_or_else(|error| panic!("{what}: the process cannot be waited for: {error}"))
}

/// Kills `child` (`SIGKILL`, as a crash stops it) and waits for it to exit.
pub(crate) async fn killed(child: &mut tokio::process::Child) {
    child.start_kill().expect("SIGKILL");
    exit_of("the killed process", child).await;
}

/// The standard error of `child` (spawned with it piped), line by line.
pub(crate) fn stderr_lines(child: &mut tokio::process::Child) -> Lines<BufReader<ChildStderr>> {
    BufReader::new(child.stderr.take().expect("piped stderr")).lines()
}

/// Reads `lines` up to the first one that contains `needle`, and returns it; fails the test
/// with `what` (and the lines read) if the stream ends first, or if it takes longer than
/// [`LIMIT`].
pub(crate) async fn line_containing<R: AsyncBufRead + Unpin>(
    what: &str,
    lines: &mut Lines<R>,
    needle: &str,
) -> String {
    let mut seen = Vec::new();
    bounded(what, async {
        while let Some(line) = lines.next_line().await.expect("readable") {
            if line.contains(needle) {
                return line;
            }
            seen.push(line);
        }
        panic!(
            "{what}: the stream ended before a line with `{needle}`:\n{}",
            seen.join("\n")
        );
    })
    .await
}

/// Spawns `command` with its standard error piped, and returns the process once it printed a
/// line containing `event` (e.g. a `workflow run --watch` reaching a step), failing the test
/// as [`line_containing`] does.
pub(crate) async fn spawned_until(
    command: &mut tokio::process::Command,
    event: &str,
) -> tokio::process::Child {
    let mut child = command
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut lines = stderr_lines(&mut child);
    line_containing(&format!("the run reaching `{event}`"), &mut lines, event).await;
    child
}

/// The address (`host:port`) of the MCP endpoint a `serve --http` start-up line names as
/// `http://ADDRESS/mcp`, if it names one.
pub(crate) fn mcp_address(line: &str) -> Option<&str> {
    line.split("http://")
        .nth(1)
        .and_then(|rest| rest.split("/mcp").next())
}

/// The flags of a fleet's node named `name` on the database `url`: its node name, and its
/// audit, approvals and workflow stores there.
pub(crate) fn fleet_node_flags<'a>(name: &'a str, url: &'a str) -> Vec<&'a str> {
    vec![
        "--node",
        name,
        "--audit",
        url,
        "--approvals",
        url,
        "--workflows",
        url,
    ]
}

/// `switchboard ARGS` as [`MARK`] on the audit, approvals and workflow stores at `url` (one
/// database, as a fleet's nodes share), run to its end with exit code 0: its JSON output.
pub(crate) async fn json_on_stores(url: &str, args: &[&str]) -> serde_json::Value {
    let output = bounded(
        "switchboard",
        switchboard(args)
            .args(MARK)
            .args(["--workflows", url, "--approvals", url, "--audit", url])
            .output(),
    )
    .await
    .expect("the binary runs");
    assert_eq!(output.status.code(), Some(0), "{args:?}: {output:?}");
    serde_json::from_slice(&output.stdout).expect("JSON")
}

/// `switchboard ARGS`: no identity, audit, approvals or workflow store, config or log filter
/// inherited from the environment, a state directory of the test binary's own, no standard input unless the test pipes one, killed if the test drops it.
pub(crate) fn switchboard(args: &[&str]) -> tokio::process::Command {
    switchboard_under(&[], args)
}

/// `switchboard serve --stdio` as alice, an acme admin, with `extra` flags, and an rmcp client
/// that completed the handshake on its standard streams; the child is killed on drop.
pub(crate) async fn serve_stdio_client(
    extra: &[&str],
) -> (
    tokio::process::Child,
    rmcp::service::RunningService<rmcp::RoleClient, ()>,
) {
    let mut args = vec![
        "serve", "--stdio", "--org", "acme", "--user", "alice", "--role", "admin",
    ];
    args.extend_from_slice(extra);
    stdio_client(&args).await
}

/// `switchboard ARGS` (a `serve --stdio`), and an rmcp client that completed the handshake on
/// its standard streams; the child is killed on drop.
pub(crate) async fn stdio_client(
    args: &[&str],
) -> (
    tokio::process::Child,
    rmcp::service::RunningService<rmcp::RoleClient, ()>,
) {
    use rmcp::ServiceExt as _;
    let mut child = switchboard(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let stdin = child.stdin.take().expect("piped stdin");
    let client = bounded("the handshake", ().serve((stdout, stdin)))
        .await
        .expect("the server starts and answers initialize");
    (child, client)
}

/// [`switchboard`], run by the program `prefix` (its first word) with the rest of `prefix`
/// before the binary, e.g. `prlimit --nofile=256:256 --`.
pub(crate) fn switchboard_under(prefix: &[&str], args: &[&str]) -> tokio::process::Command {
    let binary = env!("CARGO_BIN_EXE_switchboard");
    let mut command = match prefix.split_first() {
        Some((program, rest)) => {
            let mut command = tokio::process::Command::new(program);
            command.args(rest).arg(binary);
            command
        }
        None => tokio::process::Command::new(binary),
    };
    command.args(args).kill_on_drop(true).stdin(Stdio::null());
    for variable in [
        "SWITCHBOARD_ORG",
        "SWITCHBOARD_USER",
        "SWITCHBOARD_ROLE",
        "SWITCHBOARD_INITIATOR",
        "SWITCHBOARD_AUDIT",
        "SWITCHBOARD_APPROVALS",
        "SWITCHBOARD_AGENT_MUTATIONS",
        "SWITCHBOARD_CONFIG",
        "SWITCHBOARD_STATE_KEY",
        "SWITCHBOARD_WORKFLOWS",
        "SWITCHBOARD_NODE",
        "RUST_LOG",
    ] {
        command.env_remove(variable);
    }
    // The default state directory is the user's: every command of this test binary gets one
    // of its own instead (a test that needs its own sets `SWITCHBOARD_STATE_DIR` again).
    command.env("SWITCHBOARD_STATE_DIR", test_state_dir());
    command
}

/// The state directory of this test binary's commands, in the temp directory.
pub(crate) fn test_state_dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("switchboard-test-state-{}", std::process::id()))
}

/// A fresh state directory for one test (not created: the commands make it when they write),
/// removed on drop.
pub(crate) struct StateDir(pub(crate) std::path::PathBuf);

impl StateDir {
    pub(crate) fn new() -> Self {
        Self(std::env::temp_dir().join(format!("switchboard-state-{}", uuid::Uuid::new_v4())))
    }

    /// The directory, for `--state-dir`.
    pub(crate) fn path(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temp path")
    }

    /// `sqlite:DIR/FILE`, as a store flag names it.
    pub(crate) fn store(&self, file: &str) -> String {
        format!("sqlite:{}", self.0.join(file).display())
    }
}

impl Drop for StateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A file in the temp directory holding `text`, removed on drop.
pub(crate) struct TempFile(std::path::PathBuf);

impl TempFile {
    pub(crate) fn new(text: &str) -> Self {
        let path =
            std::env::temp_dir().join(format!("switchboard-tokens-{}.toml", uuid::Uuid::new_v4()));
        std::fs::write(&path, text).expect("the temp file is written");
        Self(path)
    }

    pub(crate) fn path(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temp path")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        // The lock file a mounts file gets beside it (docs/mounts.md).
        let _ = std::fs::remove_file(self.0.with_extension("lock"));
    }
}

/// The generated tool catalog, `docs/reference/tools.json`.
const TOOL_CATALOG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../docs/reference/tools.json"
);

/// The names of the tools `switchboard` serves by default, in catalog order (sorted by name),
/// read from the generated catalog. The architecture tests keep the catalog equal to the linked
/// registry, so no test here keeps its own list of every tool.
pub(crate) fn catalog_tool_names() -> Vec<String> {
    catalog_tools_where(|_| true)
}

/// The names of the catalog's tools of `domain`, in its order.
pub(crate) fn catalog_tool_names_of(domain: &str) -> Vec<String> {
    catalog_tools_where(|tool| tool["domain"] == domain)
}

/// The names of the catalog's tools that `keep` keeps, in its order.
fn catalog_tools_where(keep: impl Fn(&serde_json::Value) -> bool) -> Vec<String> {
    let text = std::fs::read_to_string(TOOL_CATALOG)
        .unwrap_or_else(|error| panic!("cannot read {TOOL_CATALOG}: {error}"));
    let catalog: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|error| panic!("{TOOL_CATALOG} is not JSON: {error}"));
    catalog["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{TOOL_CATALOG} has no `tools` array"))
        .iter()
        .filter(|tool| keep(tool))
        .map(|tool| {
            tool["name"]
                .as_str()
                .unwrap_or_else(|| panic!("a tool in {TOOL_CATALOG} has no name"))
                .to_owned()
        })
        .collect()
}

/// `a`, node A's audit record of a call, and `b`, node B's record of the same call run there
/// (both as `audit --json` shows them): the same tool, correlation id, digests and caller, each
/// record naming its own node.
pub(crate) fn assert_one_call_on_two_nodes(a: &serde_json::Value, b: &serde_json::Value) {
    for field in [
        "tool",
        "correlation_id",
        "input_hash",
        "output_hash",
        "org_id",
        "user_id",
    ] {
        assert_eq!(a[field], b[field], "{field}: {a} / {b}");
    }
    assert_eq!(a["node"], "node-a", "{a}");
    assert_eq!(b["node"], "node-b", "{b}");
}
