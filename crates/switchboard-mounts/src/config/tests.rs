//! The mounts file's parsing: what a valid file gives, and where and why each mistake is refused.

use super::*;

fn parse(text: &str) -> Result<MountsConfig, ConfigError> {
    MountsConfig::parse(Path::new("mounts.toml"), text)
}

/// The line, column, key and message of a refusal.
fn refusal(text: &str) -> (usize, usize, Option<String>, String) {
    match parse(text) {
        Err(ConfigError::Invalid {
            line,
            column,
            key,
            message,
            ..
        }) => (line, column, key, message),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_stdio_and_an_http_server_with_defaults_and_overrides() {
    let config = parse(
        r#"
[[server]]
id = "everything"
command = "npx"
args = ["-y", "@modelcontextprotocol/server-everything"]
env = { DEBUG = "1" }
start_timeout = "1m 30s"
category = "read"

[server.tools.printEnv]
category = "restricted"
permission = "mounts.everything.env"

[[server]]
id = "vendor"
url = "https://vendor.example/mcp"
bearer_token_env = "VENDOR_TOKEN"
call_timeout = "500ms"
lazy = true
description = "The vendor's tickets"
"#,
    )
    .expect("a valid file");
    let [everything, vendor] = config.servers.as_slice() else {
        panic!("two servers: {config:?}");
    };
    assert_eq!(everything.id, "everything");
    assert_eq!(
        everything.transport,
        Transport::Stdio {
            command: "npx".into(),
            args: vec![
                "-y".into(),
                "@modelcontextprotocol/server-everything".into()
            ],
            env: BTreeMap::from([("DEBUG".into(), "1".into())]),
            cwd: None,
        }
    );
    assert_eq!(everything.start_timeout, Duration::from_secs(90));
    assert_eq!(everything.call_timeout, DEFAULT_CALL_TIMEOUT);
    assert_eq!(everything.category, Some(Category::Read));
    assert_eq!(everything.permission, "mounts.everything");
    assert_eq!(
        everything.tools["printEnv"],
        ToolOverride {
            category: Some(Category::Restricted),
            permission: Some("mounts.everything.env".into()),
        }
    );
    assert!(!everything.lazy);
    assert_eq!(
        vendor.transport,
        Transport::Http {
            url: "https://vendor.example/mcp".into(),
            bearer_token_env: Some("VENDOR_TOKEN".into()),
        }
    );
    assert_eq!(vendor.start_timeout, DEFAULT_START_TIMEOUT);
    assert_eq!(vendor.call_timeout, Duration::from_millis(500));
    assert_eq!(vendor.category, None);
    assert!(vendor.lazy);
    assert_eq!(vendor.description.as_deref(), Some("The vendor's tickets"));
    assert_eq!(everything.description, None);
}

#[test]
fn an_empty_file_mounts_nothing() {
    assert!(parse("").expect("valid").servers.is_empty());
}

#[test]
fn an_unknown_key_is_refused_at_its_line() {
    let (line, column, _, message) = refusal("[[server]]\nid = \"a\"\ncomand = \"npx\"\n");
    assert_eq!((line, column), (3, 1));
    assert!(message.contains("unknown field `comand`"), "{message}");
    assert!(
        message.contains("`command`"),
        "names what is expected: {message}"
    );
}

#[test]
fn a_server_needs_exactly_one_transport() {
    let (line, _, key, message) = refusal("[[server]]\nid = \"a\"\n");
    assert_eq!(line, 1);
    assert_eq!(key.as_deref(), Some("server[0].command"));
    assert!(message.contains("neither `command` nor `url`"), "{message}");

    let (line, _, key, message) =
        refusal("[[server]]\nid = \"a\"\ncommand = \"x\"\nurl = \"http://h/mcp\"\n");
    assert_eq!(line, 4);
    assert_eq!(key.as_deref(), Some("server[0].url"));
    assert!(message.contains("both `command` and `url`"), "{message}");
}

#[test]
fn stdio_keys_on_an_http_server_and_the_reverse_are_refused() {
    let (_, _, key, message) =
        refusal("[[server]]\nid = \"a\"\nurl = \"http://h/mcp\"\nargs = [\"x\"]\n");
    assert_eq!(key.as_deref(), Some("server[0].url"));
    assert!(message.contains("`args`, `env` and `cwd`"), "{message}");

    let (line, _, key, _) =
        refusal("[[server]]\nid = \"a\"\ncommand = \"x\"\nbearer_token_env = \"T\"\n");
    assert_eq!(line, 4);
    assert_eq!(key.as_deref(), Some("server[0].bearer_token_env"));
}

#[test]
fn bad_ids_are_refused_with_what_an_id_may_be() {
    for id in ["", "Everything", "1st", "has-dash", &"x".repeat(33)] {
        let text = format!("[[server]]\nid = \"{id}\"\ncommand = \"x\"\n");
        let (line, column, key, message) = refusal(&text);
        assert_eq!((line, column), (2, 6), "{id}");
        assert_eq!(key.as_deref(), Some("server[0].id"));
        assert!(message.contains("a-z, 0-9 and `_`"), "{message}");
    }
}

#[test]
fn a_doubled_id_is_refused_at_the_second() {
    let text = "[[server]]\nid = \"a\"\ncommand = \"x\"\n[[server]]\nid = \"a\"\ncommand = \"y\"\n";
    let (line, _, key, message) = refusal(text);
    assert_eq!(line, 5);
    assert_eq!(key.as_deref(), Some("server[1].id"));
    assert!(message.contains("earlier server"), "{message}");
}

#[test]
fn bad_durations_categories_and_urls_are_refused() {
    let (_, _, key, message) =
        refusal("[[server]]\nid = \"a\"\ncommand = \"x\"\nstart_timeout = \"soon\"\n");
    assert_eq!(key.as_deref(), Some("server[0].start_timeout"));
    assert!(message.contains("`30s`"), "{message}");

    let (_, _, _, message) =
        refusal("[[server]]\nid = \"a\"\ncommand = \"x\"\ncall_timeout = \"0s\"\n");
    assert!(message.contains("not a positive duration"), "{message}");

    let (line, _, _, message) =
        refusal("[[server]]\nid = \"a\"\ncommand = \"x\"\ncategory = \"write\"\n");
    assert_eq!(line, 4);
    assert!(message.contains("write"), "{message}");

    let (_, _, key, message) = refusal("[[server]]\nid = \"a\"\nurl = \"ftp://h\"\n");
    assert_eq!(key.as_deref(), Some("server[0].url"));
    assert!(message.contains("not an http://"), "{message}");
}

#[test]
fn a_missing_file_names_itself() {
    let error = MountsConfig::load(Path::new("/nonexistent/mounts.toml")).expect_err("missing");
    assert!(
        error.to_string().contains("/nonexistent/mounts.toml"),
        "{error}"
    );
}

#[test]
fn the_restart_policy_has_defaults_and_takes_every_key() {
    let defaults = parse("[[server]]\nid = \"a\"\ncommand = \"x\"\n").expect("valid");
    assert_eq!(defaults.servers[0].restart, RestartPolicy::default());
    let text = "[[server]]\nid = \"a\"\ncommand = \"x\"\n[server.restart]\nbackoff = \"10ms\"\n\
                backoff_max = \"1s\"\nmax = 2\nwithin = \"30s\"\ncool_down = \"5m\"\n\
                ping_every = \"1s\"\nping_timeout = \"250ms\"\n";
    let policy = parse(text).expect("valid").servers[0].restart;
    assert_eq!(
        policy,
        RestartPolicy {
            base: Duration::from_millis(10),
            cap: Duration::from_secs(1),
            intensity: 2,
            period: Duration::from_secs(30),
            cool_down: Duration::from_secs(300),
            ping_every: Duration::from_secs(1),
            ping_deadline: Duration::from_millis(250),
        }
    );
    let (line, _, key, _) =
        refusal("[[server]]\nid = \"a\"\ncommand = \"x\"\n[server.restart]\nwithin = \"soon\"\n");
    assert_eq!(line, 5);
    assert_eq!(key.as_deref(), Some("server[0].restart.within"));
    let (_, _, _, message) =
        refusal("[[server]]\nid = \"a\"\ncommand = \"x\"\n[server.restart]\nretries = 3\n");
    assert!(message.contains("unknown field `retries`"), "{message}");
}

#[test]
#[allow(deprecated)] // rmcp 3 marks the MCP logging types deprecated (SEP-2577).
fn a_log_level_is_an_mcp_level_or_refused_with_the_levels() {
    let config = parse("[[server]]\nid = \"a\"\ncommand = \"x\"\nlog_level = \"notice\"\n")
        .expect("a valid file");
    assert_eq!(
        config.servers[0].log_level,
        Some(rmcp::model::LoggingLevel::Notice)
    );
    let unset = parse("[[server]]\nid = \"a\"\ncommand = \"x\"\n").expect("a valid file");
    assert_eq!(unset.servers[0].log_level, None);

    let (line, _, _, message) =
        refusal("[[server]]\nid = \"a\"\ncommand = \"x\"\nlog_level = \"verbose\"\n");
    assert_eq!(line, 4);
    assert!(message.contains("verbose"), "{message}");
    assert!(message.contains("debug"), "{message}");
}
