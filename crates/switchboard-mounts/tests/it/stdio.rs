//! A stdio server mounted end to end: started, its tools registered under `{id}_{tool}`,
//! called through the registry's gates with one audit record each, and closed with no child
//! left behind.

use std::{path::Path, time::Duration};

use serde_json::json;
use switchboard_audit::AuditQuery;
use switchboard_core::{CallContext, ErrorKind, Initiator};
use switchboard_mounts::{MountError, Mounts, MountsConfig, StartError, Strictness};

use crate::servers::{caller, config, npm_bin, registry};

fn everything() -> String {
    format!(
        "[[server]]\nid = \"everything\"\ncommand = {:?}\ncategory = \"read\"\nstart_timeout = \"60s\"\n",
        npm_bin("mcp-server-everything")
    )
}

fn admin() -> CallContext {
    caller(Initiator::Human, false)
}

/// Whether a process with this id is alive (signal 0 checks without signalling).
fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|stat| !stat.contains(") Z "))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mounted_tool_is_called_through_the_gates_and_audited() {
    let registry = registry().await;
    let mounts = Mounts::new(config(&everything()));
    let failed = mounts
        .start(&registry, Strictness::Strict)
        .await
        .expect("server-everything starts");
    assert!(failed.is_empty(), "{failed:?}");
    let status = mounts.status().await;
    let [server] = status.as_slice() else {
        panic!("one server: {status:?}");
    };
    assert!(
        server.tools.contains(&"everything_echo".to_owned()),
        "{:?}",
        server.tools
    );
    let pid = server.pid.expect("a stdio server has a pid");
    assert!(alive(pid));

    let echoed = registry
        .invoke("everything_echo", json!({"message": "hello"}), &admin())
        .await
        .expect("echo answers");
    let text = echoed["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("hello"), "{echoed}");

    // Refused before the call leaves the process: `org_id` comes from the context only, and
    // the server's own input schema is enforced here.
    let with_org = registry
        .invoke(
            "everything_echo",
            json!({"message": "x", "org_id": "globex"}),
            &admin(),
        )
        .await
        .expect_err("org_id is refused");
    assert_eq!(with_org.kind(), ErrorKind::OrgIdNotAllowed, "{with_org}");
    let wrong_type = registry
        .invoke("everything_echo", json!({"message": 3}), &admin())
        .await
        .expect_err("the server's schema is enforced");
    assert_eq!(wrong_type.kind(), ErrorKind::InvalidInput, "{wrong_type}");

    registry.audit().flush().await;
    let records = registry
        .audit()
        .query(&AuditQuery::all())
        .await
        .expect("the audit store answers");
    assert_eq!(records.len(), 3, "one record per call: {records:?}");
    assert!(
        records
            .iter()
            .all(|record| &*record.tool == "everything_echo")
    );

    mounts.close().await;
    mounts.close().await;
    assert!(
        registry.find("everything_echo").is_none(),
        "unregistered on close"
    );
    let gone = tokio::time::timeout(Duration::from_secs(10), async {
        while alive(pid) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(gone.is_ok(), "the child {pid} outlived close");
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_fails_to_start_is_reported_and_the_others_start() {
    let registry = registry().await;
    let text = format!(
        "{}\n[[server]]\nid = \"broken\"\ncommand = \"/nonexistent/mcp-server\"\n",
        everything()
    );
    let mounts = Mounts::new(config(&text));
    let failed = mounts
        .start(&registry, Strictness::Lenient)
        .await
        .expect("lenient mounting goes on");
    let [StartError::Spawn { id, command, .. }] = failed.as_slice() else {
        panic!("one spawn failure: {failed:?}");
    };
    assert_eq!(
        (id.as_str(), command.as_str()),
        ("broken", "/nonexistent/mcp-server")
    );
    assert!(registry.find("everything_echo").is_some());
    mounts.close().await;
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_mounting_starts_every_server_or_none() {
    let registry = registry().await;
    let text = format!(
        "{}\n[[server]]\nid = \"silent\"\ncommand = \"sleep\"\nargs = [\"30\"]\nstart_timeout = \"1s\"\n",
        everything()
    );
    let mounts = Mounts::new(config(&text));
    let refused = mounts
        .start(&registry, Strictness::Strict)
        .await
        .expect_err("strict mounting refuses");
    let MountError::Strict(StartError::Timeout { id, .. }) = &refused else {
        panic!("the silent server's timeout: {refused:?}");
    };
    assert_eq!(id, "silent");
    assert!(
        registry.find("everything_echo").is_none(),
        "nothing stays mounted"
    );
    assert!(matches!(
        mounts.start(&registry, Strictness::Lenient).await,
        Err(MountError::Closed)
    ));
    registry.shutdown().await;
}

#[test]
fn the_example_mounts_file_is_valid() {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/examples/mounts.toml");
    let config = MountsConfig::load(&path).expect("docs/examples/mounts.toml is a valid file");
    let ids: Vec<&str> = config
        .servers
        .iter()
        .map(|server| server.id.as_str())
        .collect();
    assert_eq!(ids, ["everything", "files", "time"]);
    let lazy: Vec<bool> = config.servers.iter().map(|server| server.lazy).collect();
    assert_eq!(lazy, [false, false, true]);
}

/// A run-time tool that answers nothing, to take a name before mounting.
struct Squatter;

impl switchboard_registry::RuntimeTool for Squatter {
    fn call<'a>(
        &'a self,
        _ctx: &'a switchboard_core::ToolContext,
        _params: serde_json::Value,
    ) -> switchboard_core::BoxFuture<'a, Result<serde_json::Value, switchboard_core::ToolError>>
    {
        Box::pin(async { Ok(serde_json::Value::Null) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_name_already_taken_is_refused_naming_both() {
    let registry = registry().await;
    let descriptor = switchboard_core::ToolDescriptor {
        name: "everything_echo".into(),
        title: None,
        domain: "squatters".into(),
        category: switchboard_core::Category::Read,
        permission: "squatters.read".into(),
        description: "Takes a name.".into(),
        intents: Vec::new(),
        tags: Vec::new(),
        timeout: None,
        input_schema: std::sync::Arc::new(json!({"type": "object"})),
        output_schema: None,
        tasks: switchboard_core::TaskSupport::Forbidden,
        asks_before_task: false,
        origin: switchboard_core::ToolOrigin::Runtime {
            source: "the squatter".to_owned(),
        },
    };
    registry
        .register(vec![switchboard_registry::RuntimeToolSpec {
            descriptor,
            tool: std::sync::Arc::new(Squatter),
            exposure: switchboard_registry::Exposure::Listed,
        }])
        .await
        .expect("the squatter registers");
    let mounts = Mounts::new(config(&everything()));
    let failed = mounts
        .start(&registry, Strictness::Lenient)
        .await
        .expect("lenient");
    let [
        StartError::NameTaken {
            remote,
            name,
            taken_by,
            ..
        },
    ] = failed.as_slice()
    else {
        panic!("a name taken: {failed:?}");
    };
    assert_eq!(
        (remote.as_str(), name.as_str()),
        ("echo", "everything_echo")
    );
    assert!(taken_by.contains("the squatter"), "{taken_by}");
    let message = failed[0].to_string();
    assert!(
        message.contains("`echo`") && message.contains("`everything_echo`"),
        "{message}"
    );
    assert!(
        registry.find("everything_get-sum").is_none(),
        "nothing of the server is mounted"
    );
    mounts.close().await;
    registry.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mounted_tools_progress_reaches_the_caller_of_the_registry() {
    let registry = registry().await;
    let mounts = Mounts::new(config(&everything()));
    mounts
        .start(&registry, Strictness::Strict)
        .await
        .expect("server-everything starts");
    let reports = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&reports);
    let mut context = admin();
    context.progress =
        switchboard_core::ProgressNotifier::new(move |report: switchboard_core::Progress<'_>| {
            seen.lock().expect("not poisoned").push(report.done);
        });
    registry
        .invoke(
            "everything_trigger-long-running-operation",
            json!({"duration": 1, "steps": 4}),
            &context,
        )
        .await
        .expect("the operation completes");
    let reports = reports.lock().expect("not poisoned").clone();
    assert_eq!(reports, [1.0, 2.0, 3.0, 4.0], "one report per step");
    mounts.close().await;
    registry.shutdown().await;
}
