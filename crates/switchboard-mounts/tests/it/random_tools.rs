//! Property: random tool definitions and random call params from a fixture server never panic
//! the registry, nor hang it.
//!
//! The fixture is a real rmcp server written here, served over streamable HTTP on a loopback
//! port and mounted by `url`. Its `tools/list` answer is rewritten on the way out to raw JSON,
//! so it can offer what rmcp's typed `Tool` could never carry: non-object and hostile input and output schemas, huge and
//! deeply nested ones, names of any length and alphabet, annotations of the wrong shape,
//! entries that are not tools at all. One server serves every case; each case replaces its tool
//! list, mounts it in a fresh registry, calls every tool that entered the registry with random
//! params through `ToolRegistry::invoke`, and closes the mount. Each case checks that:
//! - starting answers in time, and either registers every tool or reports the server with the
//!   typed `StartError` that says why (a listing rmcp cannot read, the tool whose name is not
//!   valid, or the registry's refusal naming the tool);
//! - every call answers in time, `Ok` or a typed error;
//! - nothing panicked anywhere in the process (a panic hook counts panics on every thread,
//!   the registry's and the mounts' actors included).

use std::{
    collections::BTreeSet,
    net::SocketAddr,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use axum::{body::Body, extract::State, http::header, response::Response};
use proptest::{
    prelude::*,
    test_runner::{Config, TestCaseError, TestRunner},
};
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ServerCapabilities,
        ServerConfig, Tool,
    },
    service::RequestContext,
    transport::StreamableHttpServerConfig,
};
use serde_json::{Map, Value, json};
use switchboard_core::Initiator;
use switchboard_mounts::{Mounts, StartError, Strictness, mounted_name};

use crate::{
    fixture_server::{mcp_route, serve_on_loopback},
    servers::{caller, config, registry},
};

/// How long starting the mount, or one call, may take before the case counts as hung: well
/// past the mount's own start and call timeouts (5 s each).
const PATIENCE: Duration = Duration::from_secs(20);

/// How many cases a run tries: each mounts the fixture once, in about 50 ms.
const CASES: u32 = 32;

/// Panics anywhere in the process since [`count_panics`]; a case fails if it rose.
static PANICS: AtomicUsize = AtomicUsize::new(0);

/// Calls made of mounted tools, over all cases: the run must have made some.
static CALLS: AtomicUsize = AtomicUsize::new(0);

/// Cases whose start was reported, over all cases.
static REPORTED: AtomicUsize = AtomicUsize::new(0);

/// Counts every panic from now on, on any thread, and still reports it as before.
fn count_panics() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, Ordering::SeqCst);
        report(info);
    }));
}

/// The fixture server: `tools/list` answers whatever definitions the case put in `tools`;
/// `tools/call` answers by the tool name's length, so that every kind of answer comes up: text
/// echoing the arguments, `isError`, `structuredContent` (which may not match the declared
/// output schema), no content at all, or a JSON-RPC error.
#[derive(Clone, Default)]
struct Fixture {
    tools: Arc<Mutex<Vec<Value>>>,
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let echo = ContentBlock::text(arguments.to_string());
        let result = match request.name.len() % 5 {
            0 => CallToolResult::success(vec![echo]),
            1 => CallToolResult::error(vec![echo]),
            2 => CallToolResult::structured(json!({"echo": arguments})),
            3 => CallToolResult::success(Vec::new()),
            _ => {
                return Err(ErrorData::invalid_params(
                    "the fixture refuses this one",
                    None,
                ));
            }
        };
        Ok(result.into())
    }
}

impl Fixture {
    fn tools(&self) -> Vec<Value> {
        self.tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Serves `fixture` over streamable HTTP on a loopback port, until the runtime ends. rmcp
/// answers every request; the answer to `tools/list` then has its tools replaced with the raw
/// definitions (a JSON answer whose `result.tools` is a list).
async fn serve(fixture: Fixture) -> SocketAddr {
    let config = StreamableHttpServerConfig::default()
        .with_json_response(true)
        .with_legacy_session_mode(false);
    let app = mcp_route(fixture.clone(), config).layer(axum::middleware::map_response_with_state(
        fixture,
        raw_tool_list,
    ));
    let (address, _serving) = serve_on_loopback(app).await;
    address
}

/// `response`, with the raw tool definitions in place of rmcp's if it answers `tools/list`.
async fn raw_tool_list(State(fixture): State<Fixture>, response: Response) -> Response {
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|kind| kind.as_bytes().starts_with(b"application/json"));
    if !json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return Response::from_parts(parts, Body::empty());
    };
    let body = match serde_json::from_slice::<Value>(&bytes) {
        Ok(mut answer) if answer.pointer("/result/tools").is_some_and(Value::is_array) => {
            answer["result"]["tools"] = Value::Array(fixture.tools());
            parts.headers.remove(header::CONTENT_LENGTH);
            Body::from(answer.to_string())
        }
        _ => Body::from(bytes),
    };
    Response::from_parts(parts, body)
}

/// Object keys: the ones schemas and the registry care about, and anything else.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("org_id".to_owned()),
        Just("type".to_owned()),
        Just("properties".to_owned()),
        Just("message".to_owned()),
        Just(String::new()),
        ".{0,8}",
    ]
}

/// Property names of a schema the registry may take: `org_id` (which it refuses) only rarely.
fn property_key() -> impl Strategy<Value = String> {
    prop_oneof![
        40 => "[a-z_]{1,8}",
        10 => ".{0,8}",
        1 => Just("org_id".to_owned()),
    ]
}

/// Any JSON value, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |float| {
            serde_json::Number::from_f64(float).map(Value::Number)
        }),
        ".{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..6)
                .prop_map(|fields| Value::Object(fields.into_iter().collect())),
        ]
    })
}

/// An input or output schema: valid, odd, hostile, or no schema at all.
fn schema() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(json!({})),
        Just(json!({"type": "object"})),
        Just(json!({"type": "string"})),
        Just(json!({"type": "objekt"})),
        Just(json!(true)),
        Just(json!(false)),
        Just(json!(null)),
        Just(json!(7)),
        Just(json!("object")),
        Just(json!([])),
        Just(json!({"type": ["object", "null"]})),
        Just(json!({"$ref": "#/$defs/missing"})),
        Just(json!({"$ref": "https://schemas.invalid/remote.json"})),
        Just(json!({"type": "object", "properties": 5})),
        Just(json!({"type": "string", "pattern": "(unclosed"})),
        Just(json!({"type": "integer", "minimum": "zero"})),
        Just(json!({"enum": []})),
        Just(json!({"type": "object", "required": ["a", "a"], "additionalProperties": false})),
        Just(json!({"type": "object", "properties": {"org_id": {"type": "string"}}})),
        json_value(),
    ];
    leaf.prop_recursive(5, 64, 8, |inner| {
        prop_oneof![
            prop::collection::btree_map(key(), inner.clone(), 0..8)
                .prop_map(|properties| json!({"type": "object", "properties": properties})),
            prop::collection::vec(inner.clone(), 0..4)
                .prop_map(|branches| json!({"anyOf": branches})),
            inner
                .clone()
                .prop_map(|items| json!({"type": "array", "items": items})),
            (inner.clone(), inner).prop_map(|(first, second)| {
                json!({"allOf": [first, second], "$defs": {"a": first}})
            }),
        ]
    })
}

/// A schema with hundreds of properties, or one nested up to `max_depth` objects deep (past
/// about 60, deeper than the client's JSON reader takes).
fn huge_schema(max_depth: usize) -> impl Strategy<Value = Value> {
    prop_oneof![
        (100..600usize).prop_map(|count| {
            let properties: Map<String, Value> = (0..count)
                .map(|index| {
                    let property = json!({"type": "string", "description": "x".repeat(64)});
                    (format!("p{index}"), property)
                })
                .collect();
            json!({"type": "object", "properties": properties})
        }),
        (1..max_depth).prop_map(|depth| {
            (0..depth).fold(
                json!({"type": "string"}),
                |inner, _| json!({"type": "object", "properties": {"a": inner}}),
            )
        }),
    ]
}

/// A tool name: ordinary, at the length limits, any Unicode, control characters, empty.
fn name() -> BoxedStrategy<String> {
    prop_oneof![
        4 => "[a-z][a-z0-9_]{0,6}",
        1 => "[A-Za-z0-9_.-]{110,125}",
        1 => "\\PC{0,12}",
        1 => "\\p{Cc}{1,3}",
        1 => "[ -~]{0,6}",
        1 => Just(String::new()),
        1 => Just("../etc/passwd".to_owned()),
    ]
    .boxed()
}

/// Annotations: hints of any value, or not annotations at all.
fn annotations() -> impl Strategy<Value = Value> {
    prop_oneof![
        (
            proptest::option::of(any::<bool>()),
            proptest::option::of(any::<bool>()),
            proptest::option::of(any::<bool>()),
            proptest::option::of(".{0,20}"),
        )
            .prop_map(|(read_only, destructive, idempotent, title)| {
                json!({
                    "readOnlyHint": read_only,
                    "destructiveHint": destructive,
                    "idempotentHint": idempotent,
                    "title": title,
                })
            }),
        Just(json!({"readOnlyHint": "true", "destructiveHint": 0})),
        Just(json!("yes")),
        json_value(),
    ]
}

/// One entry of the tool list: mostly tool definitions (of every shape), sometimes not a tool.
fn tool_entry() -> impl Strategy<Value = Value> {
    let definition = (
        name(),
        proptest::option::of(prop_oneof![".{0,40}", Just("d".repeat(20_000))]),
        prop_oneof![4 => schema(), 1 => huge_schema(150)],
        proptest::option::of(schema()),
        proptest::option::of(annotations()),
        proptest::option::of(".{0,20}"),
    )
        .prop_map(|(name, description, input, output, annotations, title)| {
            let mut tool = Map::new();
            tool.insert("name".to_owned(), Value::from(name));
            tool.insert("inputSchema".to_owned(), input);
            let optional = [
                ("description", description.map(Value::from)),
                ("outputSchema", output),
                ("annotations", annotations),
                ("title", title.map(Value::from)),
            ];
            for (field, value) in optional {
                if let Some(value) = value {
                    tool.insert(field.to_owned(), value);
                }
            }
            Value::Object(tool)
        });
    prop_oneof![
        8 => definition,
        1 => name().prop_map(|name| json!({"name": name})),
        1 => json_value(),
    ]
}

/// A JSON object, as rmcp's `Tool` requires of a schema, whatever is inside it; mostly one of
/// `"type": "object"`, as the registry requires of an input schema.
fn object_schema() -> impl Strategy<Value = Value> {
    (
        prop_oneof![4 => schema(), 1 => huge_schema(50)],
        any::<u8>(),
    )
        .prop_map(|(schema, dice)| {
            let mut object = match schema {
                Value::Object(object) => object,
                other => [("properties".to_owned(), json!({"x": other}))]
                    .into_iter()
                    .collect(),
            };
            if dice > 40 {
                object.insert("type".to_owned(), Value::from("object"));
            }
            Value::Object(object)
        })
}

/// A valid JSON Schema of any shape: scalars, enums, consts, patterns, nested objects and
/// arrays, unions; descriptions in any script.
fn valid_schema() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(json!({})),
        Just(json!({"type": "string"})),
        Just(json!({"type": "integer", "minimum": 0, "maximum": 10})),
        Just(json!({"type": "number"})),
        Just(json!({"type": "boolean"})),
        Just(json!({"type": "null"})),
        Just(json!({"type": "string", "pattern": "^[a-z]+$"})),
        Just(json!({"type": "string", "format": "date-time"})),
        "\\PC{0,30}".prop_map(|description| json!({"type": "string", "description": description})),
        prop::collection::vec(json_value(), 1..4).prop_map(|values| json!({"enum": values})),
        json_value().prop_map(|value| json!({"const": value})),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            (
                prop::collection::btree_map(property_key(), inner.clone(), 0..6),
                any::<bool>()
            )
                .prop_map(|(properties, closed)| {
                    let required: Vec<&String> = properties.keys().take(2).collect();
                    json!({
                        "type": "object",
                        "properties": properties,
                        "required": required,
                        "additionalProperties": !closed,
                    })
                }),
            inner
                .clone()
                .prop_map(|items| json!({"type": "array", "items": items})),
            prop::collection::vec(inner, 1..4).prop_map(|branches| json!({"anyOf": branches})),
        ]
    })
}

/// An input schema the registry takes: an object schema with valid properties, or a huge one.
fn valid_input_schema() -> impl Strategy<Value = Value> {
    prop_oneof![
        8 => (prop::collection::btree_map(property_key(), valid_schema(), 0..6), any::<bool>()).prop_map(
            |(properties, closed)| {
                json!({
                    "type": "object",
                    "properties": properties,
                    "additionalProperties": !closed,
                })
            }
        ),
        1 => huge_schema(50),
    ]
}

/// Annotations of the right shape, with any hints.
fn typed_annotations() -> impl Strategy<Value = Value> {
    (
        proptest::option::of(any::<bool>()),
        proptest::option::of(any::<bool>()),
        proptest::option::of(any::<bool>()),
        proptest::option::of(any::<bool>()),
    )
        .prop_map(|(read_only, destructive, idempotent, open_world)| {
            json!({
                "readOnlyHint": read_only,
                "destructiveHint": destructive,
                "idempotentHint": idempotent,
                "openWorldHint": open_world,
            })
        })
}

/// A tool list the mount can take: readable definitions with valid, distinct names, and
/// schemas and annotations whose content is anything.
fn mountable_tools() -> impl Strategy<Value = Vec<Value>> {
    let definition = (
        "[a-z][a-z0-9_.-]{0,20}",
        proptest::option::of(".{0,40}"),
        prop_oneof![9 => valid_input_schema(), 1 => object_schema()],
        proptest::option::of(prop_oneof![valid_schema(), object_schema()]),
        proptest::option::of(typed_annotations()),
    );
    prop::collection::vec(definition, 1..5).prop_map(|definitions| {
        definitions
            .into_iter()
            .enumerate()
            .map(|(index, (name, description, input, output, annotations))| {
                let mut tool = json!({"name": format!("{name}{index}"), "inputSchema": input});
                if let Some(description) = description {
                    tool["description"] = Value::from(description);
                }
                if let Some(output) = output {
                    tool["outputSchema"] = output;
                }
                if let Some(annotations) = annotations {
                    tool["annotations"] = annotations;
                }
                tool
            })
            .collect()
    })
}

/// Call params: mostly objects of any fields (`org_id` among them), sometimes any JSON.
fn params() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => prop::collection::btree_map(key(), json_value(), 0..5)
            .prop_map(|fields| Value::Object(fields.into_iter().collect())),
        1 => json_value(),
    ]
}

/// What starting must give for `tools`, read the way the client reads them.
#[derive(Debug)]
enum Expected {
    /// rmcp cannot read the listing: the server is reported, its tools unread.
    Unreadable,
    /// This tool's mounted name is not a valid tool name.
    BadName(String),
    /// Every tool registered, or the registry's refusal.
    Registered(Vec<Tool>),
}

fn expected(tools: &[Value]) -> Expected {
    // The answer as the client reads it: JSON text, within serde_json's nesting limit.
    let answer = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}});
    if serde_json::from_str::<Value>(&answer.to_string()).is_err() {
        return Expected::Unreadable;
    }
    let read: Result<Vec<Tool>, _> = tools
        .iter()
        .map(|tool| serde_json::from_value::<Tool>(tool.clone()))
        .collect();
    let Ok(read) = read else {
        return Expected::Unreadable;
    };
    let bad_name = read.iter().find(|tool| {
        let name = mounted_name("fixture", &tool.name);
        !((1..=128).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')))
    });
    match bad_name {
        Some(tool) => Expected::BadName(tool.name.to_string()),
        None => Expected::Registered(read),
    }
}

/// One case: `tools` mounted, and each registered tool called with one of `params`.
async fn case(
    fixture: &Fixture,
    address: SocketAddr,
    tools: Vec<Value>,
    params: Vec<Value>,
) -> Result<(), TestCaseError> {
    let panics_before = PANICS.load(Ordering::SeqCst);
    *fixture.tools.lock().unwrap_or_else(PoisonError::into_inner) = tools.clone();
    let registry = registry().await;
    // `warn`: the verifier reads every random text (and must not panic on it either), but
    // what it finds does not stop the tools from reaching the registry, which is under test.
    let mounts = Mounts::new(config(&format!(
        "[[server]]\nid = \"fixture\"\nurl = \"http://{address}/mcp\"\ncategory = \"read\"\n\
         start_timeout = \"5s\"\ncall_timeout = \"5s\"\nverify = \"warn\"\n"
    )));
    let started = tokio::time::timeout(PATIENCE, mounts.start(&registry, Strictness::Lenient))
        .await
        .map_err(|_| TestCaseError::fail(format!("starting hung past {PATIENCE:?}")))?;
    let failed = started
        .map_err(|error| TestCaseError::fail(format!("a lenient start refused: {error}")))?;
    prop_assert!(failed.len() <= 1, "one server, one report: {failed:?}");
    let report = failed.first();
    if report.is_some() {
        REPORTED.fetch_add(1, Ordering::SeqCst);
    }
    match (expected(&tools), report) {
        (Expected::Unreadable, Some(StartError::ListTools { id, .. })) => {
            prop_assert_eq!(id, "fixture");
        }
        (Expected::BadName(remote), Some(StartError::ToolName { remote: named, .. })) => {
            prop_assert_eq!(named, &remote);
        }
        (Expected::Registered(read), None) => {
            for tool in &read {
                let name = mounted_name("fixture", &tool.name);
                prop_assert!(registry.find(&name).is_some(), "`{}` is registered", name);
            }
        }
        (Expected::Registered(read), Some(StartError::Register { id, source })) => {
            // The refusal says which tool: a name listed twice, or a schema it cannot use.
            let names: BTreeSet<String> = read
                .iter()
                .map(|tool| mounted_name("fixture", &tool.name))
                .collect();
            let message = source.to_string();
            prop_assert_eq!(id, "fixture");
            prop_assert!(
                names.iter().any(|name| message.contains(name.as_str())),
                "the refusal names a tool: {}",
                message
            );
        }
        (expected, report) => {
            return Err(TestCaseError::fail(format!(
                "expected {expected:?}, the start reported {report:?}"
            )));
        }
    }

    let mounted: Vec<String> = registry
        .list()
        .iter()
        .filter(|descriptor| descriptor.domain == "fixture")
        .map(|descriptor| descriptor.name.to_string())
        .collect();
    let admin = caller(Initiator::Human, true);
    for (name, params) in mounted.iter().zip(params.iter().cycle()) {
        let answer = tokio::time::timeout(PATIENCE, registry.invoke(name, params.clone(), &admin))
            .await
            .map_err(|_| TestCaseError::fail(format!("calling `{name}` hung past {PATIENCE:?}")))?;
        CALLS.fetch_add(1, Ordering::SeqCst);
        if let Err(error) = answer {
            prop_assert!(
                !error.to_string().is_empty(),
                "`{}`: an error says why",
                name
            );
        }
    }
    tokio::time::timeout(PATIENCE, mounts.close())
        .await
        .map_err(|_| TestCaseError::fail("closing hung"))?;
    prop_assert_eq!(
        PANICS.load(Ordering::SeqCst),
        panics_before,
        "nothing panicked"
    );
    Ok(())
}

#[test]
fn random_tools_and_params_from_a_server_never_panic_or_hang_the_registry() {
    count_panics();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let fixture = Fixture::default();
    let address = runtime.block_on(serve(fixture.clone()));
    let mut runner = TestRunner::new(Config {
        cases: CASES,
        max_shrink_iters: 64,
        failure_persistence: None,
        ..Config::default()
    });
    let tools = prop_oneof![
        1 => prop::collection::vec(tool_entry(), 0..6),
        2 => mountable_tools(),
    ];
    let strategy = (tools, prop::collection::vec(params(), 1..4));
    let outcome = runner.run(&strategy, |(tools, params)| {
        runtime.block_on(case(&fixture, address, tools, params))
    });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
    let (calls, reported) = (
        CALLS.load(Ordering::SeqCst),
        REPORTED.load(Ordering::SeqCst),
    );
    assert!(calls > 0, "the cases called no mounted tool");
    assert!(reported > 0, "no case offered a listing the mount refuses");
    assert!(
        reported < CASES as usize,
        "every case's listing was refused"
    );
}
