//! The other public servers the issue names: npm's filesystem server (whose annotations say
//! which tools only read and which destroy) and PyPI's time server (a Python child, from the
//! venv `cargo xtask test` makes).

use std::path::Path;

use serde_json::json;
use switchboard_core::{Category, ErrorKind, Initiator};

use crate::servers::{caller, install_dir, mounted, npm_bin};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_filesystem_servers_hints_make_writes_restricted_and_reads_read() {
    let folder = std::env::temp_dir().join(format!("switchboard-mounts-{}", uuid_like()));
    std::fs::create_dir_all(&folder).expect("a folder to serve");
    std::fs::write(folder.join("notes.txt"), "first line\n").expect("a file to read");
    let text = format!(
        "[[server]]\nid = \"files\"\ncommand = {:?}\nargs = [{:?}]\nstart_timeout = \"60s\"\n",
        npm_bin("mcp-server-filesystem"),
        folder.display().to_string()
    );
    let (registry, mounts) = mounted(&text).await;

    let category = |name: &str| registry.find(name).map(|tool| tool.category);
    assert_eq!(category("files_read_text_file"), Some(Category::Read));
    assert_eq!(category("files_write_file"), Some(Category::Restricted));

    let path = folder.join("notes.txt").display().to_string();
    let read = registry
        .invoke(
            "files_read_text_file",
            json!({"path": path}),
            &caller(Initiator::Agent, false),
        )
        .await
        .expect("an agent may read");
    assert!(read.to_string().contains("first line"), "{read}");

    let written = folder.join("written.txt").display().to_string();
    let params = json!({"path": written, "content": "by a person"});
    let refused = registry
        .invoke(
            "files_write_file",
            params.clone(),
            &caller(Initiator::Agent, false),
        )
        .await
        .expect_err("an agent may not write through a destructive tool");
    assert_eq!(refused.kind(), ErrorKind::CategoryDenied, "{refused}");
    assert!(!Path::new(&written).exists(), "nothing was written");

    registry
        .invoke("files_write_file", params, &caller(Initiator::Human, true))
        .await
        .expect("a person who confirms may");
    assert_eq!(
        std::fs::read_to_string(&written).expect("the file exists"),
        "by a person"
    );

    mounts.close().await;
    registry.shutdown().await;
    let _ = std::fs::remove_dir_all(&folder);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_time_server_answers_through_the_registry() {
    let server = install_dir().join("venv/bin/mcp-server-time");
    assert!(
        server.exists(),
        "{} is missing: `cargo xtask test --prepare` installs it",
        server.display()
    );
    let text = format!(
        "[[server]]\nid = \"time\"\ncommand = {:?}\nstart_timeout = \"60s\"\n",
        server.display().to_string()
    );
    let (registry, mounts) = mounted(&text).await;
    let now = registry
        .invoke(
            "time_get_current_time",
            json!({"timezone": "UTC"}),
            &caller(Initiator::Agent, false),
        )
        .await
        .expect("the time in UTC");
    assert!(now.to_string().contains("UTC"), "{now}");
    let unknown = registry
        .invoke(
            "time_get_current_time",
            json!({"timezone": "Mars/Olympus"}),
            &caller(Initiator::Agent, false),
        )
        .await
        .expect_err("the server refuses an unknown zone");
    assert_eq!(unknown.kind(), ErrorKind::ToolFailed, "{unknown}");
    mounts.close().await;
    registry.shutdown().await;
}

/// A name no other test run uses at the same time.
fn uuid_like() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos())
    )
}
