//! The stores in PostgreSQL, chosen as an operator does: `--audit postgres://…` (and
//! `--approvals`, `--workflows`), or one `[store] url` in the config file with the password in
//! a file. Each test has a fresh database on the test server `cargo xtask test` starts, and
//! runs the real binary in separate processes, which share what they keep only through it
//! (the sample roster included: it is kept with the approvals store).
//! A URL that is wrong, a password that is wrong, or a server that is not there stops the
//! command with one line and a non-zero exit, never showing the password.

use serde_json::{Value, json};
use switchboard_test_postgres::{TestDatabase, test_database};

use crate::common::{MARK, SAM_AGENT, StateDir, TempFile, bounded, switchboard};

const SHIFT: &str = r#"{"shift_id": "acme-2026-11-24-pm", "user_id": "sam"}"#;

async fn database() -> TestDatabase {
    test_database()
        .await
        .expect("a test database (the tests run through `cargo xtask test`)")
}

/// `switchboard ARGS EXTRA` on its own state directory: exit code, stdout, stderr.
async fn run(args: &[&str], extra: &[&str]) -> (Option<i32>, String, String) {
    let state = StateDir::new();
    let output = bounded(
        "the command",
        switchboard(args)
            .args(extra)
            .env("SWITCHBOARD_STATE_DIR", &state.0)
            .output(),
    )
    .await
    .expect("the binary runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn json(stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|error| panic!("not JSON ({error}): {stdout}"))
}

/// The URL without its password, and the password.
fn split_password(url: &str) -> (String, String) {
    let (scheme, rest) = url.split_once("://").expect("a scheme");
    let (credentials, tail) = rest.rsplit_once('@').expect("credentials");
    let (user, password) = credentials
        .split_once(':')
        .expect("a password in the test URL");
    (format!("{scheme}://{user}@{tail}"), password.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_proposal_kept_in_postgres_is_approved_by_another_process_and_audited() {
    let database = database().await;
    let url = database.url();
    let stores = ["--audit", url, "--approvals", url];
    let (code, stdout, stderr) = run(
        &["call", "roster_assign_shift", SHIFT, "--json"],
        &[&SAM_AGENT[..], &stores].concat(),
    )
    .await;
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    let proposed = json(&stdout);
    assert_eq!(proposed["error"]["kind"], json!("approval_required"));
    let proposal = proposed["error"]["proposal_id"]
        .as_str()
        .expect("a proposal id")
        .to_owned();

    let (code, stdout, stderr) =
        run(&["proposals", "--json"], &[&MARK[..], &stores].concat()).await;
    assert_eq!(code, Some(0), "{stderr}");
    let listed = json(&stdout);
    assert_eq!(listed["proposals"][0]["id"], json!(proposal), "{listed:#}");

    let (code, stdout, stderr) = run(
        &["approve", &proposal, "--json"],
        &[&MARK[..], &stores].concat(),
    )
    .await;
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert_eq!(
        json(&stdout)["approved"]["output"]["assignee"],
        json!("sam")
    );

    // Approving again runs nothing: the decision is taken once.
    let (code, stdout, _) = run(
        &["approve", &proposal, "--json"],
        &[&MARK[..], &stores].concat(),
    )
    .await;
    assert_eq!(code, Some(1), "{stdout}");

    // The roster is kept in the same database: a third process sees the approved change
    // (the seeded shift is open; each process's in-memory roster would still show it open).
    let (code, stdout, stderr) = run(
        &[
            "call",
            "roster_get_shift",
            r#"{"shift_id": "acme-2026-11-24-pm"}"#,
            "--json",
        ],
        &[&MARK[..], &stores].concat(),
    )
    .await;
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert_eq!(
        json(&stdout)["result"]["assignee"],
        json!("sam"),
        "{stdout}"
    );

    let (code, stdout, stderr) = run(&["audit", "--json", "--audit", url], &[]).await;
    assert_eq!(code, Some(0), "{stderr}");
    let records = json(&stdout);
    let tools: Vec<&str> = records
        .as_array()
        .expect("records")
        .iter()
        .filter_map(|record| record["tool"].as_str())
        .collect();
    assert!(
        tools
            .iter()
            .filter(|tool| **tool == "roster_assign_shift")
            .count()
            >= 2,
        "the proposal and the approved run are both recorded: {records:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_config_files_store_url_keeps_every_store_with_the_password_in_a_file() {
    let database = database().await;
    let (url, password) = split_password(database.url());
    let secret = TempFile::new(&format!("{password}\n"));
    let config = TempFile::new(&format!(
        "[store]\nurl = \"{url}\"\npassword_file = \"{}\"\n",
        secret.path()
    ));
    let with_config = ["--config", config.path()];
    let (code, stdout, stderr) = run(
        &["call", "roster_assign_shift", SHIFT, "--json"],
        &[&SAM_AGENT[..], &with_config].concat(),
    )
    .await;
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    let proposal = json(&stdout)["error"]["proposal_id"]
        .as_str()
        .expect("a proposal id")
        .to_owned();
    // Another process, another state directory: only the database is shared.
    let (code, stdout, stderr) = run(
        &["approve", &proposal, "--json"],
        &[&MARK[..], &with_config].concat(),
    )
    .await;
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let (code, stdout, stderr) = run(&["audit", "--json"], &with_config).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        !json(&stdout).as_array().expect("records").is_empty(),
        "{stdout}"
    );
    assert!(!stderr.contains(&password));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_a_missing_server_or_a_bad_url_is_one_line_without_the_password() {
    let database = database().await;
    let (without, _) = split_password(database.url());
    let wrong = without.replacen('@', ":Wr0ngPassw0rd@", 1);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let nobody = format!("postgres://switchboard:Wr0ngPassw0rd@127.0.0.1:{port}/x");
    let no_database = "postgres://switchboard:Wr0ngPassw0rd@127.0.0.1";
    for (url, says) in [
        (wrong.as_str(), "refused the login"),
        (nobody.as_str(), "cannot reach PostgreSQL"),
        (no_database, "names no database"),
    ] {
        let (code, stdout, stderr) = run(&["audit", "--audit", url], &[]).await;
        assert_eq!(code, Some(2), "{url}: {stdout}{stderr}");
        assert!(stderr.contains(says), "{url}: {stderr}");
        assert!(!stderr.contains("Wr0ngPassw0rd"), "{url}: {stderr}");
        assert!(!stderr.contains("panicked"), "{url}: {stderr}");
        let lines: Vec<&str> = stderr.lines().filter(|line| !line.is_empty()).collect();
        assert!(
            lines.len() <= 3,
            "one line (clap adds its usage hint to a flag it refuses): {stderr}"
        );
    }
}
