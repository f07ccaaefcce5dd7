//! `switchboard serve --http --metrics`: `GET /metrics` in Prometheus text format, outside the
//! token check, counting exactly the calls and refusals a client made, and a front node's calls handed to a
//! remote domain by link and outcome. Runs the built binary on
//! a loopback port; every wait is bounded.

use std::{net::SocketAddr, time::Duration};

use http_body_util::Full;
use hyper::{Request, body::Bytes};

use crate::{
    common::{ACME_ADMIN, StateDir, bounded},
    remote_domain::{Fleet, PEER_TOKEN, TOKEN_VARIABLE, WEEK},
    serve_operate::{Served, connect, exchange, get, tools_call, tools_call_with},
};

/// The value of the sample `name` whose labels include every one of `labels`, if exactly one
/// sample matches.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let matching: Vec<f64> = text
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (series_name, series_labels) = match series.split_once('{') {
                Some((series_name, rest)) => (series_name, rest.trim_end_matches('}')),
                None => (series, ""),
            };
            let wanted = labels.iter().all(|(key, value)| {
                series_labels
                    .split(',')
                    .any(|pair| pair == format!("{key}=\"{value}\""))
            });
            (series_name == name && wanted).then(|| value.parse().ok())?
        })
        .collect();
    match matching.as_slice() {
        [value] => Some(*value),
        _ => None,
    }
}

/// `GET /metrics` on a new connection.
async fn scrape(addr: SocketAddr) -> String {
    let mut sender = bounded("connecting", connect(addr))
        .await
        .expect("connects");
    let reply = bounded("the scrape", exchange(&mut sender, get(addr, "/metrics")))
        .await
        .expect("an answer");
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_exactly_the_calls_and_refusals_made() {
    let dir = StateDir::new();
    let server = Served::start(
        &[
            &["--metrics", "--conformance", "--state-dir", dir.path()][..],
            &ACME_ADMIN,
        ]
        .concat(),
        &[],
    )
    .await;
    let addr = server.addr;
    let mut sender = bounded("connecting", connect(addr))
        .await
        .expect("connects");
    let mut id = 0;
    for (tool, times) in [
        ("core_get_current_user", 3),
        ("test_error_handling", 2),
        ("no_such_tool", 1),
    ] {
        for _ in 0..times {
            id += 1;
            let reply = bounded(tool, exchange(&mut sender, tools_call(addr, id, tool)))
                .await
                .expect("an answer");
            assert_eq!(reply.status, 200, "{reply:?}");
        }
    }
    // A page of another site: refused before anything runs.
    let foreign = Request::post("/mcp")
        .header("host", addr.to_string())
        .header("origin", "https://evil.example")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(b"{}")))
        .expect("a request");
    let mut other = bounded("connecting", connect(addr))
        .await
        .expect("connects");
    let refused = bounded("the refusal", exchange(&mut other, foreign))
        .await
        .expect("an answer");
    assert_eq!(refused.status, 403, "{refused:?}");

    // The audit writer appends in the background: wait until it wrote the six records.
    let text = bounded("the audit records written", async {
        loop {
            let text = scrape(addr).await;
            if sample(&text, "switchboard_audit_records_written_total", &[]) == Some(6.0) {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let calls = |tool: &str, outcome: &str| {
        sample(
            &text,
            "switchboard_tool_calls_total",
            &[("tool", tool), ("outcome", outcome)],
        )
    };
    assert_eq!(calls("core_get_current_user", "ok"), Some(3.0), "{text}");
    assert_eq!(
        calls("test_error_handling", "tool_failed"),
        Some(2.0),
        "{text}"
    );
    assert_eq!(calls("_unknown", "tool_not_found"), Some(1.0), "{text}");
    assert_eq!(
        sample(
            &text,
            "switchboard_tool_call_duration_seconds_count",
            &[("tool", "core_get_current_user")]
        ),
        Some(3.0),
        "{text}"
    );
    assert!(
        text.contains("switchboard_tool_call_duration_seconds_bucket{tool=\"core_get_current_user\",le=\"0.001\"}"),
        "a histogram with the documented buckets: {text}"
    );
    assert_eq!(
        sample(
            &text,
            "switchboard_http_refusals_total",
            &[("kind", "forbidden_origin")]
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "switchboard_audit_queue_depth", &[]),
        Some(0.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "switchboard_audit_records_lost_total", &[]),
        Some(0.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "switchboard_mcp_sessions", &[]),
        Some(0.0),
        "{text}"
    );
    assert!(
        sample(&text, "switchboard_http_connections", &[]).is_some_and(|open| open >= 1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "switchboard_workflow_runs", &[("state", "running")]),
        Some(0.0),
        "{text}"
    );
    assert!(
        text.contains("# HELP switchboard_tool_calls_total Tool calls, by tool and outcome"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_front_node_counts_the_calls_it_hands_to_a_remote_domain_by_link_and_outcome() {
    let fleet = Fleet::new("2s", "1s").await;
    let _b = fleet.start_b(None).await;
    let a_config = fleet.a_config.to_str().expect("UTF-8");
    let front = Served::start(
        &[
            &["--metrics", "--config", a_config][..],
            &[
                "--audit",
                "memory",
                "--approvals",
                "memory",
                "--workflows",
                "memory",
            ],
            &ACME_ADMIN,
        ]
        .concat(),
        &[(TOKEN_VARIABLE, PEER_TOKEN)],
    )
    .await;
    let addr = front.addr;
    let week: serde_json::Value = serde_json::from_str(WEEK).expect("JSON");
    let mut sender = bounded("connecting", connect(addr))
        .await
        .expect("connects");
    for id in 1..=2 {
        let reply = bounded(
            "a linked call",
            exchange(
                &mut sender,
                tools_call_with(addr, id, "roster_list_shifts", week.clone()),
            ),
        )
        .await
        .expect("an answer");
        assert_eq!(reply.status, 200, "{reply:?}");
        assert!(!reply.body.contains("isError\":true"), "{reply:?}");
    }

    let text = bounded("the link's calls counted", async {
        loop {
            let text = scrape(addr).await;
            let linked = sample(
                &text,
                "switchboard_link_calls_total",
                &[("link", "mcp"), ("domain", "roster"), ("outcome", "ok")],
            );
            if linked == Some(2.0) {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        sample(
            &text,
            "switchboard_link_call_duration_seconds_count",
            &[("link", "mcp"), ("domain", "roster")],
        ) == Some(2.0),
        "{text}"
    );
}
