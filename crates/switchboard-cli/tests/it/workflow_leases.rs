//! The workflow lease flags (`--workflow-lease`, `--workflow-sweep-every`) on the real binary:
//! `serve` and the `workflow` commands refuse durations that cannot work, before anything
//! starts, with a usage error (exit 2) that says what to change; `serve` also takes them from
//! the config file's `[serve]` table, the flags winning. What a lease does is tested with two
//! nodes in `postgres_hand_over`.

use crate::common::{StateDir, TempFile, bounded, switchboard};

/// Runs `switchboard ARGS` and returns its exit code and standard error.
async fn run(args: &[&str]) -> (Option<i32>, String) {
    let output = bounded("the switchboard binary", switchboard(args).output())
        .await
        .expect("the binary runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn lease_flags_that_cannot_work_are_usage_errors_saying_what_to_change() {
    let dir = StateDir::new();
    let serve = [
        "serve",
        "--stdio",
        "--org",
        "acme",
        "--user",
        "alice",
        "--state-dir",
        dir.path(),
    ];
    let resume = [
        "workflow",
        "resume",
        "0190b8c4-6f2e-7c3a-9d5e-2f4a6b8c0d1e",
        "--org",
        "acme",
        "--user",
        "mark",
        "--state-dir",
        dir.path(),
    ];
    for command in [&serve[..], &resume[..]] {
        for (flags, says) in [
            (
                &["--workflow-lease", "2s"][..],
                "--workflow-sweep-every (3s) must be shorter than --workflow-lease (2s)",
            ),
            (
                &["--workflow-lease", "5s", "--workflow-sweep-every", "5s"][..],
                "--workflow-sweep-every (5s) must be shorter than --workflow-lease (5s)",
            ),
            (
                &["--workflow-sweep-every", "0s"][..],
                "--workflow-sweep-every must be a positive duration",
            ),
            (
                &["--workflow-lease", "10ms"][..],
                "--workflow-lease must be at least 100ms",
            ),
        ] {
            let mut args = command.to_vec();
            args.extend_from_slice(flags);
            let (code, stderr) = run(&args).await;
            assert_eq!(code, Some(2), "{args:?}: {stderr}");
            assert!(stderr.contains(says), "{args:?}: {stderr}");
        }
    }
    // Durations that work: `serve --stdio` starts, and ends when its client closes stdin.
    let mut args = serve.to_vec();
    args.extend_from_slice(&["--workflow-lease", "3s", "--workflow-sweep-every", "500ms"]);
    let (code, stderr) = run(&args).await;
    assert_eq!(code, Some(0), "{stderr}");
}

#[tokio::test]
async fn serve_takes_the_leases_from_the_config_files_serve_table_and_the_flags_win() {
    let dir = StateDir::new();
    let serve = |config: &TempFile| {
        vec![
            "serve".to_owned(),
            "--stdio".to_owned(),
            "--org".to_owned(),
            "acme".to_owned(),
            "--user".to_owned(),
            "alice".to_owned(),
            "--state-dir".to_owned(),
            dir.path().to_owned(),
            "--config".to_owned(),
            config.path().to_owned(),
        ]
    };
    let too_short = TempFile::new("[serve]\nworkflow_lease = \"2s\"\n");
    let args = serve(&too_short);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, stderr) = run(&args).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("must be shorter than --workflow-lease (2s)")
            && stderr.contains("(set in the config file's [serve] table"),
        "{stderr}"
    );
    // The flag wins over the file's value.
    let mut flagged = args.clone();
    flagged.extend_from_slice(&["--workflow-lease", "10s"]);
    let (code, stderr) = run(&flagged).await;
    assert_eq!(code, Some(0), "{stderr}");

    let not_a_duration = TempFile::new("[serve]\nworkflow_sweep_every = \"often\"\n");
    let args = serve(&not_a_duration);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, stderr) = run(&args).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("`[serve] workflow_sweep_every` in the config file: `often`"),
        "{stderr}"
    );
}
