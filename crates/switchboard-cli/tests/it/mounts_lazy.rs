//! Lazy mounted servers over a real MCP client (rmcp) against `switchboard serve --stdio`:
//! npm's `server-everything` and `server-filesystem` mounted with `lazy = true` stay out of
//! `tools/list`, the instructions introduce them, and `mcp_search`, `mcp_describe`,
//! `mcp_call` and `mcp_connect` reach them through every gate. A 2025-11-25 session that
//! connects a server sees its tools listed after `tools/list_changed`; a 2026-07-28 client's
//! list never changes.

use std::{
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt as _, RoleClient,
    model::{CallToolRequestParams, CallToolResult, ProtocolVersion},
    service::{NotificationContext, RunningService},
};
use serde_json::{Value, json};

use crate::{
    common::{TempFile, bounded, switchboard},
    mounts_support::{close, npm_bin, serve_stdio_mounting},
};

/// A client that counts `notifications/tools/list_changed`.
#[derive(Clone, Default)]
struct Recorder {
    list_changed: Arc<AtomicUsize>,
}

impl ClientHandler for Recorder {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.fetch_add(1, Ordering::SeqCst);
    }
}

type Client = RunningService<RoleClient, Recorder>;

/// A folder for the filesystem server, and the mounts file mounting both servers lazily.
fn lazy_mounts(folder: &std::path::Path) -> TempFile {
    TempFile::new(&format!(
        "[[server]]\nid = \"everything\"\ncommand = {:?}\ncategory = \"read\"\n\
         start_timeout = \"60s\"\nlazy = true\n\n\
         [[server]]\nid = \"files\"\ncommand = {:?}\nargs = [{:?}]\nstart_timeout = \"60s\"\n\
         lazy = true\ndescription = \"Files in one folder\"\n",
        npm_bin("mcp-server-everything"),
        npm_bin("mcp-server-filesystem"),
        folder.display().to_string(),
    ))
}

/// `switchboard serve --stdio` as alice, an acme admin, mounting `file`, auditing to `audit`.
fn serve(file: &TempFile, audit: &str) -> tokio::process::Child {
    serve_stdio_mounting(file)
        .args(["--audit", audit])
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the binary starts")
}

async fn connect(
    child: &mut tokio::process::Child,
    lifecycle: ClientLifecycleMode,
) -> (Client, Recorder) {
    let stdout = child.stdout.take().expect("piped stdout");
    let stdin = child.stdin.take().expect("piped stdin");
    let recorder = Recorder::default();
    let client = bounded(
        "the handshake",
        recorder
            .clone()
            .serve_with_lifecycle((stdout, stdin), lifecycle),
    )
    .await
    .expect("the server answers");
    (client, recorder)
}

async fn names(client: &Client) -> Vec<String> {
    bounded("tools/list", client.list_all_tools())
        .await
        .expect("tools/list")
        .into_iter()
        .map(|tool| tool.name.to_string())
        .collect()
}

async fn call(client: &Client, tool: &str, arguments: Value) -> CallToolResult {
    bounded(
        "tools/call",
        client.call_tool(
            CallToolRequestParams::new(tool.to_owned())
                .with_arguments(arguments.as_object().cloned().unwrap_or_default()),
        ),
    )
    .await
    .expect("a result")
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn temp(prefix: &str) -> PathBuf {
    std::env::temp_dir().join(format!("{prefix}-{}", uuid::Uuid::new_v4()))
}

/// The tools of the audit records in `audit`, in order.
async fn audited_tools(audit: &str) -> Vec<String> {
    let listed = bounded(
        "switchboard audit",
        switchboard(&["audit", "--audit", audit, "--json"]).output(),
    )
    .await
    .expect("the binary runs");
    let records: Value = serde_json::from_slice(&listed.stdout).unwrap_or_else(|error| {
        panic!(
            "the audit records as JSON ({error}): {}",
            String::from_utf8_lossy(&listed.stderr)
        )
    });
    records
        .as_array()
        .expect("an array")
        .iter()
        .filter_map(|record| record["tool"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_client_searches_describes_calls_and_connects_lazy_servers() {
    let folder = temp("switchboard-lazy");
    std::fs::create_dir_all(&folder).expect("a folder to serve");
    let file = lazy_mounts(&folder);
    let audit_db = temp("switchboard-lazy-audit").with_extension("db");
    let audit = format!("sqlite:{}", audit_db.display());
    let mut child = serve(&file, &audit);
    let (client, recorder) = connect(&mut child, ClientLifecycleMode::Initialize).await;

    // Listed: the meta-tools and the native tools; not the lazy servers' tools.
    let listed = names(&client).await;
    for meta in ["mcp_search", "mcp_describe", "mcp_call", "mcp_connect"] {
        assert!(listed.iter().any(|name| name == meta), "{meta}: {listed:?}");
    }
    assert!(listed.iter().any(|name| name == "core_get_current_user"));
    assert!(
        !listed
            .iter()
            .any(|name| name.starts_with("everything_") || name.starts_with("files_")),
        "{listed:?}"
    );

    // The instructions introduce each lazy server in one line.
    let instructions = client
        .peer_info()
        .and_then(|info| info.instructions.clone())
        .unwrap_or_default();
    assert!(instructions.contains("mcp_search(query)"), "{instructions}");
    assert!(instructions.contains("\n- everything: "), "{instructions}");
    assert!(instructions.contains("\n- files: "), "{instructions}");

    // Search: one line per matching tool, `server/tool: what it does`.
    let found = call(&client, "mcp_search", json!({"query": "SUM"})).await;
    assert_ne!(found.is_error, Some(true), "{found:?}");
    let found = text(&found);
    assert!(found.contains("everything/get-sum: "), "{found}");
    assert!(!found.contains("files/"), "{found}");

    // Describe: the full definition, and a near miss answers what it may mean.
    let described = call(
        &client,
        "mcp_describe",
        json!({"server": "everything", "tool": "get-sum"}),
    )
    .await;
    assert_ne!(described.is_error, Some(true), "{described:?}");
    let definition: Value = serde_json::from_str(&text(&described)).expect("JSON");
    assert_eq!(definition["name"], "everything_get-sum", "{definition}");
    assert_eq!(definition["category"], "read", "{definition}");
    assert!(
        definition["input_schema"]["properties"]["a"].is_object(),
        "{definition}"
    );
    let missed = call(
        &client,
        "mcp_describe",
        json!({"server": "everything", "tool": "get-summ"}),
    )
    .await;
    assert_eq!(missed.is_error, Some(true), "{missed:?}");
    assert!(
        text(&missed).contains("did you mean `get-sum`"),
        "{missed:?}"
    );

    // Call: the target's content blocks, as if it were listed.
    let sum = call(
        &client,
        "mcp_call",
        json!({"server": "everything", "tool": "get-sum", "arguments": {"a": 1, "b": 2}}),
    )
    .await;
    assert_ne!(sum.is_error, Some(true), "{sum:?}");
    assert_eq!(text(&sum), "The sum of 1 and 2 is 3.", "{sum:?}");

    // An org_id in the arguments is refused before anything runs.
    let org = call(
        &client,
        "mcp_call",
        json!({"server": "everything", "tool": "get-sum",
               "arguments": {"a": 1, "b": 2, "org_id": "other"}}),
    )
    .await;
    assert_eq!(org.is_error, Some(true), "{org:?}");
    assert!(text(&org).contains("org_id"), "{org:?}");

    // This client is an agent: a destructive-hinted tool stays out of its reach.
    let written = folder.join("written.txt");
    let write = call(
        &client,
        "mcp_call",
        json!({"server": "files", "tool": "write_file",
               "arguments": {"path": written.display().to_string(), "content": "x"}}),
    )
    .await;
    assert_eq!(write.is_error, Some(true), "{write:?}");
    assert!(
        text(&write).contains("never runs on an agent's initiative"),
        "{write:?}"
    );
    assert!(!written.exists(), "nothing was written");

    // Connect: the server's tools join this session's list, and the client is told.
    let before = recorder.list_changed.load(Ordering::SeqCst);
    let connected = call(&client, "mcp_connect", json!({"server": "everything"})).await;
    assert_ne!(connected.is_error, Some(true), "{connected:?}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while recorder.list_changed.load(Ordering::SeqCst) == before {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no tools/list_changed after mcp_connect"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let listed = names(&client).await;
    assert!(
        listed.iter().any(|name| name == "everything_echo"),
        "{listed:?}"
    );
    assert!(
        !listed.iter().any(|name| name.starts_with("files_")),
        "only the connected server: {listed:?}"
    );

    // Connecting twice, or to what is not a lazy server, says what to do instead.
    let again = call(&client, "mcp_connect", json!({"server": "everything"})).await;
    assert_eq!(again.is_error, Some(true), "{again:?}");
    assert!(text(&again).contains("already connected"), "{again:?}");
    let unknown = call(&client, "mcp_connect", json!({"server": "nowhere"})).await;
    assert_eq!(unknown.is_error, Some(true), "{unknown:?}");
    assert!(text(&unknown).contains("is not mounted"), "{unknown:?}");
    assert!(
        text(&unknown).contains("`everything`, `files`"),
        "{unknown:?}"
    );

    close(client, child).await;

    // The target's own record is there beside the meta-tool's; the refused calls never
    // reached their target's body, and the write left its refusal.
    let tools = audited_tools(&audit).await;
    let count = |name: &str| tools.iter().filter(|tool| *tool == name).count();
    assert_eq!(count("everything_get-sum"), 1, "{tools:?}");
    assert_eq!(count("files_write_file"), 1, "{tools:?}");
    assert_eq!(count("mcp_call"), 3, "{tools:?}");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", audit_db.display()));
    }
    let _ = std::fs::remove_dir_all(&folder);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_07_28_clients_list_never_changes_and_mcp_call_reaches_the_tools() {
    let folder = temp("switchboard-lazy-2026");
    std::fs::create_dir_all(&folder).expect("a folder to serve");
    let file = lazy_mounts(&folder);
    let audit_db = temp("switchboard-lazy-2026-audit").with_extension("db");
    let audit = format!("sqlite:{}", audit_db.display());
    let mut child = serve(&file, &audit);
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let (client, _recorder) = connect(&mut child, lifecycle).await;
    let before = names(&client).await;
    assert!(
        before.iter().any(|name| name == "mcp_connect"),
        "{before:?}"
    );

    let refused = call(&client, "mcp_connect", json!({"server": "everything"})).await;
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    let why = text(&refused);
    assert!(why.contains("2026-07-28"), "{why}");
    assert!(why.contains("mcp_call(server, tool, arguments)"), "{why}");
    assert_eq!(names(&client).await, before, "the list did not change");

    let sum = call(
        &client,
        "mcp_call",
        json!({"server": "everything", "tool": "get-sum", "arguments": {"a": 2, "b": 2}}),
    )
    .await;
    assert_eq!(text(&sum), "The sum of 2 and 2 is 4.", "{sum:?}");

    close(client, child).await;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", audit_db.display()));
    }
    let _ = std::fs::remove_dir_all(&folder);
}
