//! The config file's `[telemetry]` table: `otlp_endpoint` and `service_name` switch the OTLP
//! export on for a process that sets no `OTEL_*` variables, the standard variables win over
//! them, and an endpoint that is no `http(s)://` URL stops the command with exit code 2 naming
//! the file and the key.

use crate::{
    common::{ACME_ADMIN, TempFile, bounded, switchboard},
    otlp_receiver::Receiver,
};

/// `switchboard call core_get_current_user --config FILE` as alice, with `env` set: its exit
/// code and standard error.
async fn call_with(config: &TempFile, env: &[(&str, String)]) -> (Option<i32>, String) {
    let mut command = switchboard(&["call", "core_get_current_user", "--config", config.path()]);
    command.args(ACME_ADMIN);
    for (name, value) in env {
        command.env(name, value);
    }
    let output = bounded("switchboard call", command.output())
        .await
        .expect("the binary runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_config_file_names_the_collector_and_the_service_and_the_environment_wins() {
    let (file_receiver, env_receiver) = (Receiver::start().await, Receiver::start().await);
    let config = TempFile::new(&format!(
        "[telemetry]\notlp_endpoint = \"{}/\"\nservice_name = \"switchboard-from-file\"\n",
        file_receiver.endpoint()
    ));

    // The file alone: its collector gets the call's span, under its service name. The
    // command's end sends what is batched.
    let (code, stderr) = call_with(&config, &[]).await;
    assert_eq!(code, Some(0), "{stderr}");
    let spans = file_receiver
        .until("the call's span at the file's collector", |spans| {
            !spans.is_empty()
        })
        .await;
    assert_eq!(spans.len(), 1, "{spans:#?}");
    assert_eq!(spans[0].name, "tools/call core_get_current_user");
    assert_eq!(spans[0].service, "switchboard-from-file");

    // The environment's endpoint and service name win over the file's.
    let (code, stderr) = call_with(
        &config,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", env_receiver.endpoint()),
            ("OTEL_SERVICE_NAME", "switchboard-from-env".to_owned()),
        ],
    )
    .await;
    assert_eq!(code, Some(0), "{stderr}");
    let spans = env_receiver
        .until("the call's span at the environment's collector", |spans| {
            !spans.is_empty()
        })
        .await;
    assert_eq!(spans[0].service, "switchboard-from-env", "{spans:#?}");
    assert_eq!(
        file_receiver.spans().len(),
        1,
        "nothing more went to the file's"
    );

    // `OTEL_SDK_DISABLED=true` wins over the file too: nothing is exported.
    let (code, stderr) = call_with(&config, &[("OTEL_SDK_DISABLED", "true".to_owned())]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        file_receiver.spans().len(),
        1,
        "nothing exported when disabled"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_that_is_no_http_url_is_a_usage_error_naming_the_file_and_the_key() {
    let config = TempFile::new("[telemetry]\notlp_endpoint = \"otel-collector:4318\"\n");
    let (code, stderr) = call_with(&config, &[]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("`[telemetry] otlp_endpoint` in the config file"),
        "{stderr}"
    );
    assert!(stderr.contains(config.path()), "{stderr}");
    assert!(stderr.contains("`otel-collector:4318`"), "{stderr}");
    assert!(stderr.contains("http://otel-collector:4318"), "{stderr}");

    let unknown = TempFile::new("[telemetry]\nendpoint = \"http://127.0.0.1:4318\"\n");
    let (code, stderr) = call_with(&unknown, &[]).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("unknown field `endpoint`"), "{stderr}");
}
