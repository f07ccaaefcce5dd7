//! An OTLP/HTTP trace receiver for the tests, real where it counts: it listens on a loopback
//! port, accepts `POST /v1/traces` with an `application/x-protobuf` body, decodes it as
//! OpenTelemetry's `ExportTraceServiceRequest` (`opentelemetry-proto`, `prost`) and keeps every
//! span it received, with the `service.name` of the resource that sent it. What a served
//! `switchboard` exports to it is so read as an OpenTelemetry collector would read it.

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    Router,
    body::Bytes,
    extract::State,
    http::{HeaderMap, StatusCode, header::CONTENT_TYPE},
    response::IntoResponse,
    routing::post,
};
use opentelemetry_proto::tonic::{
    collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse},
    common::v1::{AnyValue, KeyValue, any_value::Value},
};
use prost::Message as _;

use crate::common::bounded;

/// The content type of OTLP/HTTP's binary (protobuf) encoding.
const PROTOBUF: &str = "application/x-protobuf";

/// One span as the receiver got it; ids in lower-case hex, as a `traceparent` writes them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ReceivedSpan {
    /// The `service.name` of the resource that exported it.
    pub(crate) service: String,
    pub(crate) trace_id: String,
    pub(crate) span_id: String,
    /// The parent's span id; `None` for a root span.
    pub(crate) parent_span_id: Option<String>,
    pub(crate) name: String,
    /// Its attributes, each value written out (strings as they are).
    pub(crate) attributes: BTreeMap<String, String>,
}

impl ReceivedSpan {
    /// The attribute `key`, or `""`.
    pub(crate) fn attribute(&self, key: &str) -> &str {
        self.attributes.get(key).map_or("", String::as_str)
    }
}

/// The running receiver; it stops with the test's runtime.
pub(crate) struct Receiver {
    address: SocketAddr,
    spans: Arc<Mutex<Vec<ReceivedSpan>>>,
}

impl Receiver {
    /// Starts a receiver on a free loopback port.
    pub(crate) async fn start() -> Self {
        let spans = Arc::new(Mutex::new(Vec::new()));
        let app = Router::new()
            .route("/v1/traces", post(receive))
            .with_state(Arc::clone(&spans));
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .expect("a loopback port");
        let address = listener.local_addr().expect("the bound address");
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { address, spans }
    }

    /// The base URL to give as `OTEL_EXPORTER_OTLP_ENDPOINT` (the exporter appends
    /// `/v1/traces`).
    pub(crate) fn endpoint(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Every span received so far.
    pub(crate) fn spans(&self) -> Vec<ReceivedSpan> {
        self.spans.lock().expect("not poisoned").clone()
    }

    /// The spans received, once `enough` says they are (polled every 50 ms); fails the test
    /// with `what` and what was received if that takes longer than the tests' bound.
    pub(crate) async fn until(
        &self,
        what: &str,
        enough: impl Fn(&[ReceivedSpan]) -> bool,
    ) -> Vec<ReceivedSpan> {
        let waited = tokio::time::timeout(crate::common::LIMIT, async {
            loop {
                let spans = self.spans();
                if enough(&spans) {
                    return spans;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await;
        waited.unwrap_or_else(|_| panic!("{what}: not received; got {:#?}", self.spans()))
    }
}

/// `POST /v1/traces`: keeps the spans of a protobuf `ExportTraceServiceRequest` and answers an
/// empty `ExportTraceServiceResponse` (full success); `415` for another content type, `400`
/// for a body that does not decode.
async fn receive(
    State(spans): State<Arc<Mutex<Vec<ReceivedSpan>>>>,
    headers: HeaderMap,
    body: Bytes,
) -> impl IntoResponse {
    let content_type = headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    if content_type != PROTOBUF {
        return (StatusCode::UNSUPPORTED_MEDIA_TYPE, Vec::new()).into_response();
    }
    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
        return (StatusCode::BAD_REQUEST, Vec::new()).into_response();
    };
    let received = request
        .resource_spans
        .into_iter()
        .flat_map(|resource_spans| {
            let service = resource_spans
                .resource
                .iter()
                .flat_map(|resource| resource.attributes.iter())
                .find(|attribute| attribute.key == "service.name")
                .map(|attribute| written(attribute.value.as_ref()))
                .unwrap_or_default();
            resource_spans
                .scope_spans
                .into_iter()
                .flat_map(|scope_spans| scope_spans.spans)
                .map(move |span| ReceivedSpan {
                    service: service.clone(),
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_span_id: (!span.parent_span_id.is_empty())
                        .then(|| hex(&span.parent_span_id)),
                    name: span.name,
                    attributes: span.attributes.iter().map(attribute).collect(),
                })
        });
    spans.lock().expect("not poisoned").extend(received);
    (
        StatusCode::OK,
        [(CONTENT_TYPE, PROTOBUF)],
        ExportTraceServiceResponse::default().encode_to_vec(),
    )
        .into_response()
}

fn attribute(key_value: &KeyValue) -> (String, String) {
    (key_value.key.clone(), written(key_value.value.as_ref()))
}

/// An attribute value written out: a string as it is, anything else as `Debug` shows it.
fn written(value: Option<&AnyValue>) -> String {
    match value.and_then(|value| value.value.as_ref()) {
        Some(Value::StringValue(text)) => text.clone(),
        Some(Value::BoolValue(flag)) => flag.to_string(),
        Some(Value::IntValue(number)) => number.to_string(),
        Some(Value::DoubleValue(number)) => number.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_receiver_refuses_what_is_not_an_otlp_protobuf_export() {
    let receiver = Receiver::start().await;
    let mut client = crate::http_client::Client::connect(receiver.address).await;
    let post = |content_type: &str, body: &'static [u8]| {
        hyper::Request::post("/v1/traces")
            .header("host", receiver.address.to_string())
            .header("content-type", content_type)
            .body(http_body_util::Full::new(hyper::body::Bytes::from_static(
                body,
            )))
            .expect("a request")
    };
    let json = bounded("a JSON post", client.send(post("application/json", b"{}"))).await;
    assert_eq!(json.status, 415, "{json:?}");
    let garbage = bounded(
        "a garbage post",
        client.send(post(PROTOBUF, b"\xff\xff\xff")),
    )
    .await;
    assert_eq!(garbage.status, 400, "{garbage:?}");
    assert!(receiver.spans().is_empty());
}
