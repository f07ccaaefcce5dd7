//! A workflow run's events over Server-Sent Events: every event in order with its id, resuming
//! after `Last-Event-ID`, live events of a running run, and who may watch which run.

use std::{sync::Arc, time::Duration};

use reqwest::{StatusCode, header};
use serde_json::{Value, json};
use switchboard_core::{CallContext, Initiator};
use switchboard_workflows::{Definition, RunId};

use crate::server::Served;

/// The longest a stream may take to end: reaching it means it hangs.
const PATIENCE: Duration = Duration::from_secs(30);

/// One received SSE event: its id, its type and its JSON data.
#[derive(Debug)]
struct Received {
    id: u64,
    kind: String,
    data: Value,
}

/// The events of an SSE body, keep-alive comments left out.
fn parse(body: &str) -> Vec<Received> {
    body.split("\n\n")
        .filter_map(|block| {
            let field = |name: &str| {
                block
                    .lines()
                    .find_map(|line| line.strip_prefix(name))
                    .map(|value| value.trim_start().to_owned())
            };
            let data = field("data:")?;
            Some(Received {
                id: field("id:")?.parse().expect("a numeric id"),
                kind: field("event:")?,
                data: serde_json::from_str(&data).expect("JSON data"),
            })
        })
        .collect()
}

/// A person of acme starting runs.
fn alice() -> CallContext {
    CallContext::builder()
        .org("acme")
        .user("alice")
        .session("workflows-test")
        .correlation("workflows-test")
        .role("admin")
        .initiator(Initiator::Human)
        .build()
}

/// A workflow that waits `wait`, then reads the caller's user.
fn definition(served: &Served, wait: &str) -> Arc<Definition> {
    let document = json!({
        "workflow": "wait_then_read",
        "nodes": [
            { "id": "pause", "wait": wait },
            { "id": "me", "tool": "core_get_current_user", "params": {} },
        ],
    });
    Arc::new(
        switchboard_workflows::validate(&document, &served.registry.list())
            .expect("the test's workflow is valid"),
    )
}

/// `GET` the run's events with `headers`, read to the end.
async fn events(
    served: &Served,
    run: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, Option<String>, String) {
    let mut request = served
        .client
        .get(served.url(&format!("/workflows/runs/{run}/events")));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = tokio::time::timeout(PATIENCE, request.send())
        .await
        .expect("answered in time")
        .expect("the server answers");
    let status = response.status();
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|value| value.to_str().expect("text").to_owned());
    let body = tokio::time::timeout(PATIENCE, response.text())
        .await
        .expect("the stream ends in time")
        .expect("a body");
    (status, content_type, body)
}

async fn finished_run(served: &Served) -> RunId {
    let outcome = served
        .engine
        .run_to_end(definition(served, "1ms"), json!({}), &alice())
        .await
        .expect("the run ends");
    assert_eq!(outcome.state.as_str(), "completed");
    outcome.run
}

#[tokio::test]
async fn a_finished_run_streams_every_event_in_order_then_ends() {
    let served = Served::with_tokens().await;
    let run = finished_run(&served).await;
    let (status, content_type, body) = events(
        &served,
        &run.to_string(),
        &[("authorization", "Bearer alice-token")],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(content_type.as_deref(), Some("text/event-stream"));
    let received = parse(&body);
    let stored = served.engine.steps(run, &alice()).expect("readable");
    assert!(!stored.is_empty());
    assert!(received.len() >= 4, "{body}");
    for (index, event) in received.iter().enumerate() {
        assert_eq!(event.id, index as u64 + 1, "ids are the seqs, from 1");
        assert_eq!(event.data["seq"], event.id);
        assert_eq!(event.data["run"], run.to_string());
        assert_eq!(event.kind, event.data["type"].as_str().expect("a type"));
    }
    let last = received.last().expect("events");
    assert_eq!(last.kind, "run");
    assert_eq!(last.data["state"]["state"], "completed", "{}", last.data);

    // Resuming after an id sends only what follows it.
    let (status, _, resumed) = events(
        &served,
        &run.to_string(),
        &[
            ("authorization", "Bearer alice-token"),
            ("last-event-id", "2"),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let resumed = parse(&resumed);
    assert_eq!(resumed.len(), received.len() - 2);
    assert_eq!(resumed.first().map(|event| event.id), Some(3));

    // A session cookie of the same organisation reads it too.
    let cookie = served.sign_in("sam-token").await;
    let (status, _, body) = events(&served, &run.to_string(), &[("cookie", &cookie)]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(parse(&body).len(), received.len());
}

#[tokio::test]
async fn a_running_run_streams_its_events_as_they_happen() {
    let served = Served::with_tokens().await;
    let run = served
        .engine
        .start(definition(&served, "2s"), json!({}), &alice())
        .await
        .expect("starts");
    let started = std::time::Instant::now();
    let (status, _, body) = events(
        &served,
        &run.to_string(),
        &[("authorization", "Bearer alice-token")],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "the stream lasted as long as the run"
    );
    let received = parse(&body);
    let ids: Vec<u64> = received.iter().map(|event| event.id).collect();
    let expected: Vec<u64> = (1..=ids.len() as u64).collect();
    assert_eq!(ids, expected, "each event once, in order");
    let last = received.last().expect("events");
    assert_eq!(last.data["state"]["state"], "completed", "{}", last.data);
}

#[tokio::test]
async fn only_the_runs_organisation_may_watch_it() {
    let served = Served::with_tokens().await;
    let run = finished_run(&served).await.to_string();

    let (status, content_type, body) =
        events(&served, &run, &[("authorization", "Bearer gina-token")]).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "another organisation's run");
    assert_eq!(content_type.as_deref(), Some("application/json"));
    let error: Value = serde_json::from_str(&body).expect("a JSON error");
    assert_eq!(error["error"], "run_not_found");

    let unknown = RunId::new().to_string();
    let (status, _, _) = events(
        &served,
        &unknown,
        &[("authorization", "Bearer alice-token")],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "an unknown run");

    let (status, _, _) = events(&served, &run, &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "no token");
    let (status, _, _) = events(&served, &run, &[("authorization", "Bearer wrong")]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "an unknown token");

    let (status, _, body) = events(
        &served,
        "not-a-run",
        &[("authorization", "Bearer alice-token")],
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let error: Value = serde_json::from_str(&body).expect("a JSON error");
    assert_eq!(error["error"], "invalid_run_id");

    let (status, _, _) = events(
        &served,
        &run,
        &[
            ("authorization", "Bearer alice-token"),
            ("origin", "http://evil.example"),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "another site's page");
}

#[tokio::test]
async fn one_person_holds_a_bounded_number_of_streams() {
    let served = Served::with_tokens().await;
    let run = served
        .engine
        .start(definition(&served, "1h"), json!({}), &alice())
        .await
        .expect("starts")
        .to_string();
    let url = served.url(&format!("/workflows/runs/{run}/events"));
    let open = |token: &'static str| {
        served
            .client
            .get(&url)
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .send()
    };
    let mut held = Vec::new();
    for _ in 0..switchboard_web::MAX_EVENT_STREAMS_PER_PERSON {
        let response = open("alice-token").await.expect("the server answers");
        assert_eq!(response.status(), StatusCode::OK);
        held.push(response);
    }
    let refused = open("alice-token").await.expect("the server answers");
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let error: Value =
        serde_json::from_str(&refused.text().await.expect("a body")).expect("a JSON error");
    assert_eq!(error["error"], "too_many_streams");

    // Another person of the organisation still gets one.
    let other = open("mark-token").await.expect("the server answers");
    assert_eq!(other.status(), StatusCode::OK);

    drop(held);
}
