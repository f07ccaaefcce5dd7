//! `serve`'s requestState key, end to end: a key that is not hex or shorter than 32 bytes,
//! from `--state-key-file`, `SWITCHBOARD_STATE_KEY` or the config file's `[serve]` table, is
//! refused before the server starts
//! (exit 2, saying where the key came from and how to make one); a valid key is used without
//! a word; no key at all is generated, with a warning. `serve --stdio` with a closed standard
//! input stops as soon as it has started, so each run is short.

use std::process::Output;

use crate::common::{TempFile, bounded, switchboard};

const SERVE: [&str; 6] = ["serve", "--stdio", "--org", "acme", "--user", "alice"];
const VALID_KEY: &str = "5b0c6f3d9e2a47c18f60b3a9d2e4c7f1a8b5d0e3f6a9c2b5e8d1f4a7c0b3e6d9";
const GENERATED: &str = "no requestState key configured";

/// `switchboard serve … EXTRA`, with `SWITCHBOARD_STATE_KEY` set to `key_variable`.
async fn serve(extra: &[&str], key_variable: Option<&str>) -> Output {
    let mut args = SERVE.to_vec();
    args.extend(extra);
    let mut command = switchboard(&args);
    if let Some(key) = key_variable {
        command.env("SWITCHBOARD_STATE_KEY", key);
    }
    bounded("serve", command.output())
        .await
        .expect("the binary runs")
}

fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_or_short_key_is_refused_before_serving() {
    let not_hex = TempFile::new("this is not a key\n");
    let output = serve(&["--state-key-file", not_hex.path()], None).await;
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(output.stdout.is_empty(), "{output:?}");
    let stderr = stderr_of(&output);
    assert!(
        stderr.contains("not hexadecimal")
            && stderr.contains("--state-key-file")
            && stderr.contains("openssl rand -hex 32"),
        "{stderr}"
    );

    let output = serve(&[], Some("abcd")).await;
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = stderr_of(&output);
    assert!(
        stderr.contains("2 bytes long") && stderr.contains("SWITCHBOARD_STATE_KEY"),
        "{stderr}"
    );

    let output = serve(&["--state-key-file", "/no/such/key"], None).await;
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(stderr_of(&output).contains("/no/such/key"), "{output:?}");

    let config = TempFile::new(&format!("[serve]\nstate_key_file = {:?}\n", not_hex.path()));
    let output = serve(&["--config", config.path()], None).await;
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = stderr_of(&output);
    assert!(
        stderr.contains("not hexadecimal") && stderr.contains("[serve]"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_key_is_used_quietly_and_a_missing_one_is_generated_with_a_warning() {
    let key_file = TempFile::new(&format!("{VALID_KEY}\n"));
    let config = TempFile::new(&format!(
        "[serve]\nstate_key_file = {:?}\n",
        key_file.path()
    ));
    for output in [
        serve(&["--state-key-file", key_file.path()], None).await,
        serve(&[], Some(VALID_KEY)).await,
        serve(&["--config", config.path()], None).await,
    ] {
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        assert!(!stderr_of(&output).contains(GENERATED), "{output:?}");
    }

    let output = serve(&[], None).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let stderr = stderr_of(&output);
    assert!(
        stderr.contains(GENERATED)
            && stderr.contains("--state-key-file")
            && stderr.contains("restart"),
        "{stderr}"
    );
}
