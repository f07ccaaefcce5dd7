//! Bad input on the stdio transport, in process ([`serve_io`] over a `tokio::io::duplex`
//! pipe): malformed JSON, wrong JSON-RPC shapes, random bytes and over-long lines never end the
//! server, each gets the JSON-RPC error it deserves, and a valid request afterwards is still
//! answered. Fixed cases pin the exact replies. Two proptests: one feeds random lines before
//! and after `initialize`; the other interleaves random requests (odd ids, reused ids, unknown
//! methods), notifications and client responses with a well-behaved client's requests, before
//! and after `initialize`, and checks that every one of those requests is answered and that
//! every line the server writes is a JSON-RPC 2.0 message.

use std::{sync::OnceLock, time::Duration};

use proptest::prelude::*;
use serde_json::{Value, json};
use switchboard_mcp::{Identity, STDIO_MAX_MESSAGE_BYTES, serve_io};
use switchboard_registry::ToolRegistry;
use tokio::{
    io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream, ReadHalf, WriteHalf},
    task::JoinHandle,
};

/// The longest any single step may take.
const LIMIT: Duration = Duration::from_secs(20);

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":"probe-init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"garbage-test","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const WHOAMI: &str = r#"{"jsonrpc":"2.0","id":"probe-call","method":"tools/call","params":{"name":"core_get_current_user","arguments":{}}}"#;

/// One runtime and one registry for every case (starting a registry per case would dominate).
fn runtime_and_registry() -> &'static (tokio::runtime::Runtime, ToolRegistry) {
    static SHARED: OnceLock<(tokio::runtime::Runtime, ToolRegistry)> = OnceLock::new();
    SHARED.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        let registry = runtime
            .block_on(ToolRegistry::start())
            .expect("the registry starts");
        (runtime, registry)
    })
}

/// A server on one end of a pipe; the client's reader and writer on the other.
struct Connection {
    server: JoinHandle<Result<(), switchboard_mcp::McpError>>,
    lines: tokio::io::Lines<BufReader<ReadHalf<DuplexStream>>>,
    writer: WriteHalf<DuplexStream>,
}

fn connect(registry: &ToolRegistry) -> Connection {
    let (client, server) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server);
    let identity = Identity::agent("acme", "alice").with_role("admin");
    let server = tokio::spawn(serve_io(
        registry.clone(),
        identity,
        server_read,
        server_write,
    ));
    let (client_read, writer) = tokio::io::split(client);
    Connection {
        server,
        lines: BufReader::new(client_read).lines(),
        writer,
    }
}

async fn bounded<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, future)
        .await
        .unwrap_or_else(|_| panic!("{what} took longer than {LIMIT:?}"))
}

impl Connection {
    async fn send(&mut self, bytes: &[u8]) {
        bounded("writing", self.writer.write_all(bytes))
            .await
            .expect("the server reads");
    }

    async fn send_line(&mut self, line: &str) {
        self.send(format!("{line}\n").as_bytes()).await;
    }

    /// The next line the server wrote, as JSON (every line must be one JSON-RPC message).
    async fn next(&mut self) -> Value {
        let line = bounded("reading a reply", self.lines.next_line())
            .await
            .expect("the pipe is readable")
            .expect("the server is still writing");
        let value: Value = serde_json::from_str(&line).unwrap_or_else(|error| {
            panic!("the server wrote a line that is not JSON ({error}): {line:?}")
        });
        assert_json_rpc(&value);
        value
    }

    /// Replies until the one with `id`, returned with the ones before it.
    async fn until(&mut self, id: &str) -> (Value, Vec<Value>) {
        let mut before = Vec::new();
        loop {
            let message = self.next().await;
            if message["id"] == json!(id) {
                return (message, before);
            }
            before.push(message);
        }
    }

    /// Closes the client's side and checks that the server ends cleanly, reading (and
    /// checking) what it still writes, so that it never waits on a full pipe.
    async fn finish(mut self) {
        // Dropping one half of a split duplex does not close it: shut the direction down.
        bounded("closing the input", self.writer.shutdown())
            .await
            .expect("the pipe closes");
        while let Some(line) = bounded("reading the last lines", self.lines.next_line())
            .await
            .expect("the pipe is readable")
        {
            let value: Value = serde_json::from_str(&line).unwrap_or_else(|error| {
                panic!("the server wrote a line that is not JSON ({error}): {line:?}")
            });
            assert_json_rpc(&value);
        }
        bounded("the server ending", self.server)
            .await
            .expect("the server task did not panic")
            .expect("the server ends without an error");
    }
}

/// Fails unless `message` is a JSON-RPC 2.0 message: an object with `"jsonrpc": "2.0"` that is
/// either a request or notification (a string `method`) or a response (an `id` member, and
/// exactly one of `result` and `error`, an error having an integer `code` and a string
/// `message`).
fn assert_json_rpc(message: &Value) {
    let Some(object) = message.as_object() else {
        panic!("not a JSON object: {message}");
    };
    assert_eq!(object.get("jsonrpc"), Some(&json!("2.0")), "{message}");
    if object.contains_key("method") {
        assert!(object["method"].is_string(), "{message}");
        return;
    }
    assert!(
        object.contains_key("id"),
        "a response without an id: {message}"
    );
    match (object.get("result"), object.get("error")) {
        (Some(_), None) => {}
        (None, Some(error)) => {
            assert!(error["code"].is_i64(), "{message}");
            assert!(error["message"].is_string(), "{message}");
        }
        _ => panic!("neither a request nor a response: {message}"),
    }
}

fn error_code(message: &Value) -> Option<i64> {
    message["error"]["code"].as_i64()
}

#[test]
fn fixed_bad_lines_get_their_json_rpc_errors_and_the_server_keeps_serving() {
    let (runtime, registry) = runtime_and_registry();
    runtime.block_on(async {
        let mut connection = connect(registry);
        // Before initialize: garbage, a notification and a response (rmcp alone would end the
        // session on those two).
        connection.send(b"{not json\n").await;
        let parse_error = connection.next().await;
        assert_eq!(parse_error["id"], Value::Null, "{parse_error}");
        assert_eq!(error_code(&parse_error), Some(-32700), "{parse_error}");
        let message = parse_error["error"]["message"].as_str().unwrap_or_default();
        assert!(message.starts_with("Parse error"), "{parse_error}");
        connection.send_line(INITIALIZED).await;
        connection
            .send_line(r#"{"jsonrpc":"2.0","id":9,"result":{}}"#)
            .await;
        connection.send_line(INITIALIZE).await;
        let (initialized, before) = connection.until("probe-init").await;
        assert!(before.is_empty(), "{before:?}");
        assert!(
            initialized["result"]["serverInfo"].is_object(),
            "{initialized}"
        );
        connection.send_line(INITIALIZED).await;

        // After initialize: every kind of bad line, then a valid call.
        connection.send(b"\xff\xfe\x00random bytes\r\n").await;
        connection.send_line(r#"{"foo": 1}"#).await;
        connection
            .send_line(r#"{"jsonrpc": "2.0", "id": 7, "method": 12}"#)
            .await;
        connection.send_line("[1, 2]").await;
        connection.send_line("   ").await;
        connection
            .send_line(r#"{"jsonrpc":"2.0","id":8,"method":"no/such/method"}"#)
            .await;
        // Known methods with params that do not fit: invalid params, not "no such method".
        connection
            .send_line(r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"arguments":{}}}"#)
            .await;
        connection
            .send_line(r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"core_get_current_user","arguments":[1]}}"#)
            .await;
        let mut too_long = vec![b'x'; STDIO_MAX_MESSAGE_BYTES + 10];
        too_long.push(b'\n');
        connection.send(&too_long).await;
        connection.send_line(WHOAMI).await;

        let (answer, before) = connection.until("probe-call").await;
        // rmcp answers the unknown method from its own task: compare without order.
        let mut summary: Vec<String> = before
            .iter()
            .map(|message| format!("{} {:?}", message["id"], error_code(message)))
            .collect();
        summary.sort();
        let mut expected = [
            "null Some(-32700)",
            "null Some(-32600)",
            "7 Some(-32600)",
            "null Some(-32600)",
            "8 Some(-32601)",
            "10 Some(-32602)",
            "11 Some(-32602)",
            "null Some(-32600)",
        ];
        expected.sort_unstable();
        assert_eq!(summary, expected, "{before:#?}");
        assert_eq!(
            answer["result"]["structuredContent"]["user_id"],
            json!("alice"),
            "{answer}"
        );
        connection.finish().await;
    });
}

#[test]
fn a_client_that_leaves_before_initialize_is_not_an_error() {
    let (runtime, registry) = runtime_and_registry();
    runtime.block_on(async {
        let mut connection = connect(registry);
        connection.send(b"garbage\n").await;
        assert_eq!(error_code(&connection.next().await), Some(-32700));
        connection.finish().await;
    });
}

/// One line of input: random bytes, printable noise, or JSON that is not quite JSON-RPC.
fn garbage_line() -> impl Strategy<Value = Vec<u8>> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "[a-z/]{0,12}".prop_map(Value::from),
    ];
    let shape = prop_oneof![
        leaf.clone(),
        (leaf.clone(), leaf.clone())
            .prop_map(|(id, method)| json!({"jsonrpc": "2.0", "id": id, "method": method})),
        (leaf.clone(), leaf.clone()).prop_map(|(id, params)| {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
        }),
        leaf.clone()
            .prop_map(|id| json!({"jsonrpc": "1.0", "id": id, "method": "ping"})),
        (leaf.clone(), leaf.clone())
            .prop_map(|(id, result)| json!({"jsonrpc": "2.0", "id": id, "result": result})),
        prop::collection::vec(leaf, 0..4).prop_map(Value::from),
    ];
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..200),
        "[ -~]{0,80}".prop_map(String::into_bytes),
        shape.prop_map(|value| value.to_string().into_bytes()),
    ]
}

/// How many `-32700` replies `lines` must get: one per non-blank line that is not JSON (lines
/// are cut at every `\n`, as the server reads them).
fn expected_parse_errors(lines: &[Vec<u8>]) -> usize {
    lines
        .iter()
        .flat_map(|line| line.split(|byte| *byte == b'\n'))
        .filter(|segment| !segment.iter().all(u8::is_ascii_whitespace))
        .filter(|segment| {
            let segment = segment.strip_suffix(b"\r").unwrap_or(segment);
            serde_json::from_slice::<Value>(segment).is_err()
        })
        .count()
}

async fn send_all(connection: &mut Connection, lines: &[Vec<u8>]) {
    for line in lines {
        connection.send(line).await;
        connection.send(b"\n").await;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_lines_never_end_the_server_and_a_valid_call_is_still_answered(
        before_init in prop::collection::vec(garbage_line(), 0..12),
        after_init in prop::collection::vec(garbage_line(), 0..12),
    ) {
        let (runtime, registry) = runtime_and_registry();
        runtime.block_on(async {
            let mut connection = connect(registry);
            send_all(&mut connection, &before_init).await;
            connection.send_line(INITIALIZE).await;
            let (initialized, replies_before) = connection.until("probe-init").await;
            assert!(initialized["result"].is_object(), "{initialized}");
            connection.send_line(INITIALIZED).await;
            send_all(&mut connection, &after_init).await;
            connection.send_line(WHOAMI).await;
            let (answer, replies_after) = connection.until("probe-call").await;
            assert_eq!(
                answer["result"]["structuredContent"]["user_id"],
                json!("alice"),
                "{answer}"
            );

            let replies: Vec<&Value> = replies_before.iter().chain(&replies_after).collect();
            for reply in &replies {
                assert!(
                    reply["error"]["code"].is_i64() || reply.get("result").is_some(),
                    "every line is a JSON-RPC response: {reply}"
                );
            }
            let parse_errors = replies
                .iter()
                .filter(|reply| error_code(reply) == Some(-32700))
                .count();
            let expected = expected_parse_errors(&before_init) + expected_parse_errors(&after_init);
            assert_eq!(parse_errors, expected, "{replies:#?}");
            connection.finish().await;
        });
    }
}

/// An id as written on the wire: strings and small integers (so that ids repeat, including while
/// a request with the same id is in flight), integers beyond 64 bits, fractions, `null`,
/// objects and arrays. Never of the form `wb-N`, which is the well-behaved client's.
fn wire_id() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{0,3}".prop_map(|id| format!("{id:?}")),
        (0_i64..4).prop_map(|id| id.to_string()),
        Just("123456789012345678901234567890".to_owned()),
        Just("18446744073709551615".to_owned()),
        Just("-9223372036854775809".to_owned()),
        Just("1.5".to_owned()),
        Just("2.0".to_owned()),
        Just("1e400".to_owned()),
        Just("null".to_owned()),
        Just(r#"{"a":1}"#.to_owned()),
        Just("[1]".to_owned()),
    ]
}

/// A method: real ones (no `initialize`: the well-behaved client starts the session), unknown
/// ones, and odd strings.
fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("ping".to_owned()),
        Just("tools/list".to_owned()),
        Just("tools/call".to_owned()),
        Just("server/discover".to_owned()),
        Just("resources/list".to_owned()),
        Just("logging/setLevel".to_owned()),
        "[a-z/]{0,12}",
    ]
}

/// A message a misbehaving client sends: a request, a notification (cancellations too) or a
/// response (a result or an error), with odd ids and params.
fn odd_message() -> impl Strategy<Value = String> {
    let params = prop_oneof![
        Just(String::new()),
        Just(r#","params":{}"#.to_owned()),
        Just(r#","params":{"name":"core_get_current_user","arguments":{}}"#.to_owned()),
        Just(r#","params":{"name":"no_such_tool"}"#.to_owned()),
        Just(r#","params":[1,2]"#.to_owned()),
        Just(r#","params":null"#.to_owned()),
    ];
    prop_oneof![
        (wire_id(), method(), params.clone()).prop_map(|(id, method, params)| {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":{method:?}{params}}}"#)
        }),
        (method(), params).prop_map(|(method, params)| {
            format!(r#"{{"jsonrpc":"2.0","method":"notifications/{method}"{params}}}"#)
        }),
        Just(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned()),
        wire_id().prop_map(|id| {
            format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#
            )
        }),
        wire_id().prop_map(|id| format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)),
        wire_id().prop_map(|id| {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-1,"message":"no"}}}}"#)
        }),
    ]
}

/// One step of a session: the misbehaving side's lines (sent in one write, so that requests
/// with the same id are in flight together), or a request of the well-behaved client.
#[derive(Debug, Clone)]
enum Step {
    Odd(Vec<String>),
    Garbage(Vec<u8>),
    WellBehaved,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => prop::collection::vec(odd_message(), 1..6).prop_map(Step::Odd),
        1 => garbage_line().prop_map(Step::Garbage),
        2 => Just(Step::WellBehaved),
    ]
}

impl Connection {
    /// Plays `step`; a well-behaved request (a ping before the session has started, a call
    /// after) must get its own answer.
    async fn play(&mut self, step: &Step, well_behaved: &mut u32, started: bool) {
        match step {
            Step::Odd(lines) => {
                let mut bytes = lines.join("\n").into_bytes();
                bytes.push(b'\n');
                self.send(&bytes).await;
            }
            Step::Garbage(line) => {
                let mut bytes = line.clone();
                bytes.push(b'\n');
                self.send(&bytes).await;
            }
            Step::WellBehaved => {
                *well_behaved += 1;
                let id = format!("wb-{well_behaved}");
                if started {
                    let call = json!({
                        "jsonrpc": "2.0",
                        "id": id,
                        "method": "tools/call",
                        "params": {"name": "core_get_current_user", "arguments": {}},
                    });
                    self.send_line(&call.to_string()).await;
                    let (answer, _) = self.until(&id).await;
                    assert_eq!(
                        answer["result"]["structuredContent"]["user_id"],
                        json!("alice"),
                        "{answer}"
                    );
                } else {
                    let ping = json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
                    self.send_line(&ping.to_string()).await;
                    let (answer, _) = self.until(&id).await;
                    assert_eq!(answer["result"], json!({}), "{answer}");
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_well_behaved_client_is_served_throughout_whatever_else_arrives(
        before_init in prop::collection::vec(step(), 0..8),
        after_init in prop::collection::vec(step(), 0..12),
    ) {
        let (runtime, registry) = runtime_and_registry();
        runtime.block_on(async {
            let mut connection = connect(registry);
            let mut well_behaved = 0;
            for step in &before_init {
                connection.play(step, &mut well_behaved, false).await;
            }
            connection.send_line(INITIALIZE).await;
            let (initialized, _) = connection.until("probe-init").await;
            assert!(initialized["result"]["serverInfo"].is_object(), "{initialized}");
            connection.send_line(INITIALIZED).await;
            for step in &after_init {
                connection.play(step, &mut well_behaved, true).await;
            }
            connection.play(&Step::WellBehaved, &mut well_behaved, true).await;
            connection.finish().await;
        });
    }
}
