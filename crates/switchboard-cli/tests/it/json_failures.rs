//! Under `--json`, a command line that fails before anything runs (`PARAMS_JSON` that is not
//! JSON, an id flag that is not an id, a flag value clap refuses) prints the one JSON object
//! of every `--json` failure on standard output, `{"error": {"kind", "message"}}`, with kind
//! `usage_error` and exit code 2, and nothing on standard error. Without `--json` the same
//! failures stay text on standard error.

use std::process::Output;

use serde_json::Value;

use crate::common::{bounded, switchboard};

const IDENTITY: [&str; 4] = ["--org", "acme", "--user", "alice"];

async fn run(args: &[&str]) -> Output {
    bounded("the command", switchboard(args).output())
        .await
        .expect("the binary runs")
}

/// The `error` object of a `--json` usage failure, after checking the exit code and streams.
async fn usage_error_json(args: &[&str]) -> Value {
    let output = run(args).await;
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(output.stderr.is_empty(), "{output:?}");
    let report: Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
    let error = report["error"].clone();
    assert_eq!(error["kind"], "usage_error", "{report}");
    assert_eq!(
        report.as_object().map(|object| object.len()),
        Some(1),
        "{report}"
    );
    error
}

fn message(error: &Value) -> &str {
    error["message"].as_str().expect("a message")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn params_that_are_not_json_are_a_json_usage_error() {
    let mut args = vec!["call", "core_get_current_user", "not json", "--json"];
    args.extend(IDENTITY);
    let error = usage_error_json(&args).await;
    assert!(
        message(&error).contains("PARAMS_JSON is not valid JSON"),
        "{error}"
    );

    // Empty standard input in place of PARAMS_JSON.
    let mut args = vec!["call", "core_get_current_user", "-", "--json"];
    args.extend(IDENTITY);
    let error = usage_error_json(&args).await;
    assert!(
        message(&error).contains("standard input is empty"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn id_flags_that_are_not_ids_are_a_json_usage_error_for_every_command() {
    let commands: [&[&str]; 4] = [
        &["call", "core_get_current_user", "{}"],
        &["ask", "who am I"],
        &["approve", "prop-1"],
        &["reject", "prop-1", "--feedback", "no"],
    ];
    for command in commands {
        let mut args = command.to_vec();
        args.extend(IDENTITY);
        args.extend(["--correlation", "not an id", "--json"]);
        let error = usage_error_json(&args).await;
        assert!(
            message(&error).contains("--correlation"),
            "{command:?}: {error}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flags_clap_refuses_are_a_json_usage_error() {
    let mut args = vec!["call", "core_get_current_user", "{}", "--json"];
    args.extend(IDENTITY);
    args.extend(["--initiator", "robot"]);
    let error = usage_error_json(&args).await;
    assert!(message(&error).contains("robot"), "{error}");

    let error = usage_error_json(&["approve", "--json"]).await;
    assert!(message(&error).contains("<ID>"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_json_the_same_failures_are_text_on_standard_error() {
    let mut args = vec!["call", "core_get_current_user", "not json"];
    args.extend(IDENTITY);
    let output = run(&args).await;
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(output.stdout.is_empty(), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("PARAMS_JSON is not valid JSON"), "{stderr}");
}
