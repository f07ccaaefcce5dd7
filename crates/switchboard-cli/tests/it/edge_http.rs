//! The HTTP edge of `switchboard serve --http`, seen from outside as a client or an attacker
//! would: sessions and connections are bounded, refusals keep keep-alive connections usable,
//! bad input gets a JSON-RPC error (with an `id` member) and the right status, request ids in
//! flight are not shared, and answers that need no stream are one JSON body. Each test starts
//! the built binary on a loopback port; every loop is bounded in count, every wait in time.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::http_client::{
    Client, INITIALIZE, Server, assert_error_with_id, assert_json_rpc_error, assert_whoami,
    raw_body, raw_exchange, tcp_from,
};

/// A 2026-07-28 `tools/call` of `core_get_current_user` (no session; everything in the request).
fn stateless_whoami(id: u64) -> String {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {
            "name": "core_get_current_user", "arguments": {},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    })
    .to_string()
}

const STATELESS_HEADERS: &[(&str, &str)] = &[
    ("mcp-protocol-version", "2026-07-28"),
    ("mcp-method", "tools/call"),
    ("mcp-name", "core_get_current_user"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_at_its_session_cap_loses_its_longest_idle_session_or_is_refused_429() {
    let server = Server::start(&["--max-sessions-per-client", "3"]).await;
    let mut clients = Vec::new();
    for _ in 0..3 {
        let mut client = Client::connect(server.addr).await;
        assert_eq!(client.initialize().await.status, 200);
        clients.push(client);
    }
    // A fourth session ends the longest-idle one, the first.
    let mut fourth = Client::connect(server.addr).await;
    assert_eq!(fourth.initialize().await.status, 200);
    assert_whoami(&fourth.whoami(1).await);
    let evicted = clients[0].whoami(2).await;
    assert_json_rpc_error(&evicted, 404, -32600);
    assert_whoami(&clients[1].whoami(3).await);

    // With every one of its sessions open (an event stream held), a new one is refused.
    let mut streams = Vec::new();
    for client in clients.iter().skip(1).chain([&fourth]) {
        let session = client.session.clone().expect("a session");
        let mut stream = tcp_from("127.0.0.1", server.addr).await;
        let request = format!(
            "GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\n\
             Mcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-11-25\r\n\r\n",
            server.addr
        );
        stream
            .write_all(request.as_bytes())
            .await
            .expect("the stream request is sent");
        let mut head = [0_u8; 12];
        crate::common::bounded("the stream's status line", stream.read_exact(&mut head))
            .await
            .expect("a status line");
        assert_eq!(&head, b"HTTP/1.1 200", "the event stream opens");
        streams.push(stream);
    }
    let mut fifth = Client::connect(server.addr).await;
    let refused = fifth.initialize().await;
    let message = assert_json_rpc_error(&refused, 429, -32600);
    assert_eq!(message["id"], json!("init"), "{message}");
    assert_eq!(refused.header("retry-after"), "5", "{refused:?}");
    assert_whoami(&fourth.whoami(4).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_total_session_cap_refuses_503_without_ending_another_clients_session() {
    let server = Server::start(&["--max-sessions", "2", "--max-sessions-per-client", "2"]).await;
    let mut first = Client::connect_from("127.0.0.2", server.addr).await;
    assert_eq!(first.initialize().await.status, 200);
    let mut second = Client::connect_from("127.0.0.3", server.addr).await;
    assert_eq!(second.initialize().await.status, 200);
    let mut third = Client::connect_from("127.0.0.4", server.addr).await;
    let refused = third.initialize().await;
    assert_json_rpc_error(&refused, 503, -32600);
    assert!(!refused.header("retry-after").is_empty(), "{refused:?}");
    assert_whoami(&first.whoami(1).await);
    assert_whoami(&second.whoami(2).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_abandoned_sessions_leaves_memory_flat() {
    let mut server = Server::start(&["--max-sessions-per-client", "50"]).await;
    let mut client = Client::connect(server.addr).await;
    // Warm up: the first sessions allocate what every later one reuses.
    for _ in 0..100 {
        assert_eq!(client.initialize().await.status, 200);
    }
    let before = server.rss_kib();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut opened = 0;
    while opened < 2_000 && Instant::now() < deadline {
        let answer = client.post(&[], INITIALIZE).await;
        assert_eq!(answer.status, 200, "{answer:?}");
        opened += 1;
    }
    let after = server.rss_kib();
    assert!(server.is_running());
    assert!(opened >= 500, "only {opened} sessions in 60 s");
    // 2,000 sessions kept would be over 100 MiB; 50 kept, a few MiB.
    assert!(
        after < before + 20 * 1024,
        "RSS grew from {before} KiB to {after} KiB over {opened} abandoned sessions"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_peers_never_lock_out_others_under_a_low_file_limit() {
    // The server gets 256 file descriptors; an attacker on 127.0.0.2 opens 300 idle sockets.
    let server = Server::start_under(&["prlimit", "--nofile=256:256", "--"], &[]).await;
    let mut idle = Vec::new();
    for _ in 0..300 {
        idle.push(tcp_from("127.0.0.2", server.addr).await);
    }
    // The attacker's connections over its cap are answered 503 and closed.
    let mut refused = 0;
    for stream in &mut idle {
        let mut buffer = [0_u8; 12];
        if let Ok(Ok(12)) =
            tokio::time::timeout(Duration::from_millis(20), stream.read(&mut buffer)).await
            && &buffer == b"HTTP/1.1 503"
        {
            refused += 1;
        }
    }
    assert!(
        refused >= 300 - 128,
        "only {refused} of 300 idle sockets were refused"
    );
    // Another client is served at once, on every connection it opens.
    for id in 0..5 {
        let mut client = Client::connect(server.addr).await;
        let answer = client.post(STATELESS_HEADERS, &stateless_whoami(id)).await;
        assert_whoami(&answer);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_and_half_sent_connections_time_out() {
    let server = Server::start(&["--request-head-timeout", "1", "--body-timeout", "1"]).await;
    // An idle connection is closed by the server after the head timeout.
    let mut idle = tcp_from("127.0.0.1", server.addr).await;
    let mut buffer = Vec::new();
    let started = Instant::now();
    let read =
        crate::common::bounded("the idle connection closing", idle.read_to_end(&mut buffer)).await;
    assert!(read.is_ok() && started.elapsed() < Duration::from_secs(30));

    // A head that never ends is cut off too.
    let mut slow = tcp_from("127.0.0.1", server.addr).await;
    slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .expect("half a head is sent");
    let mut buffer = Vec::new();
    let _ = crate::common::bounded("the slow head closing", slow.read_to_end(&mut buffer)).await;

    // A body that stops halfway gets 408 and the connection is closed.
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\"",
        server.addr
    );
    let answer = raw_exchange(server.addr, request.as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("connection: close"),
        "{answer}"
    );
    assert_eq!(
        raw_body(&answer)["error"]["code"],
        json!(-32600),
        "{answer}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_leave_the_connection_usable_or_say_it_closes() {
    let tokens = crate::common::TempFile::new(&format!(
        "[[token]]\nsha256 = \"{}\"\norg = \"acme\"\nuser = \"alice\"\nroles = [\"admin\"]\n",
        "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    ));
    let server = Server::start(&["--tokens", tokens.path()]).await;
    let bearer = ("authorization", "Bearer test");
    let refusals: [&[(&str, &str)]; 4] = [
        // 401: no token.
        &[],
        // 403: a foreign origin.
        &[bearer, ("origin", "http://evil.example.com")],
        // 404: an unknown session.
        &[bearer, ("mcp-session-id", "no-such-session")],
        // 400: a protocol version the server does not know.
        &[bearer, ("mcp-protocol-version", "1999-01-01")],
    ];
    for headers in refusals {
        let mut client = Client::connect(server.addr).await;
        let refused = client.post(headers, INITIALIZE).await;
        assert!(refused.status >= 400, "{refused:?}");
        let usable = client.is_usable().await;
        assert!(
            refused.closes() || usable,
            "the connection was closed without `Connection: close` after {refused:?}"
        );
        if usable {
            let answer = client
                .post(
                    &[
                        bearer,
                        STATELESS_HEADERS[0],
                        STATELESS_HEADERS[1],
                        STATELESS_HEADERS[2],
                    ],
                    &stateless_whoami(7),
                )
                .await;
            assert_whoami(&answer);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_json_batches_and_other_versions_get_json_rpc_errors() {
    let server = Server::start(&[]).await;
    let mut client = Client::connect(server.addr).await;
    let cases: [(&str, i64, Value); 6] = [
        ("{not json", -32700, Value::Null),
        ("", -32700, Value::Null),
        (
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            -32600,
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"1.0","id":"v1","method":"ping"}"#,
            -32600,
            json!("v1"),
        ),
        (r#"{"id":2,"method":"ping"}"#, -32600, json!(2)),
        (
            r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}"#,
            -32600,
            Value::Null,
        ),
    ];
    for (body, code, id) in cases {
        let answer = client.post(&[], body).await;
        let message = assert_json_rpc_error(&answer, 400, code);
        assert_eq!(message["id"], id, "{body}: {message}");
        assert!(
            !answer.closes(),
            "the body was read; the connection stays: {answer:?}"
        );
    }
    // The same connection still serves.
    assert_whoami(&client.post(STATELESS_HEADERS, &stateless_whoami(1)).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_request_without_a_session_is_told_how_to_get_one() {
    let server = Server::start(&[]).await;
    let mut client = Client::connect(server.addr).await;
    let answer = client
        .post(
            &[("mcp-protocol-version", "2025-11-25")],
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#,
        )
        .await;
    let message = assert_json_rpc_error(&answer, 400, -32600);
    assert_eq!(message["id"], json!(5), "{message}");
    let text = message["error"]["message"].as_str().unwrap_or_default();
    assert!(
        text.contains("`mcp-session-id` header") && text.contains("send `initialize` first"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_id_in_flight_is_refused_at_once_and_answers_are_never_swapped() {
    let server = Server::start(&["--approve-by-elicitation"]).await;
    let mut client = Client::connect(server.addr).await;
    assert_eq!(client.initialize().await.status, 200);
    let session = client.session.clone().expect("a session");

    // A mutating call waits for the user's approval (an elicitation), so id 42 stays in flight
    // once its answer's stream has opened.
    let mut waiting = Client::connect(server.addr).await;
    waiting.session = Some(session.clone());
    let call = json!({
        "jsonrpc": "2.0", "id": 42, "method": "tools/call",
        "params": {"name": "roster_assign_shift",
                   "arguments": {"shift_id": "acme-2026-11-24-pm", "user_id": "sam"}},
    });
    let in_flight = waiting
        .post_head(&[("mcp-protocol-version", "2025-11-25")], &call.to_string())
        .await;
    assert_eq!(in_flight.status(), 200);
    let duplicate = client
        .post(
            &[("mcp-protocol-version", "2025-11-25")],
            r#"{"jsonrpc":"2.0","id":42,"method":"tools/list"}"#,
        )
        .await;
    let message = assert_json_rpc_error(&duplicate, 400, -32600);
    assert_eq!(message["id"], json!(42), "{message}");
    // Once the first call's answer stream is gone, its id is free again.
    drop(in_flight);
    drop(waiting);
    let deadline = Instant::now() + crate::common::LIMIT;
    loop {
        let answer = client
            .post(
                &[("mcp-protocol-version", "2025-11-25")],
                r#"{"jsonrpc":"2.0","id":42,"method":"ping"}"#,
            )
            .await;
        if answer.status == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "id 42 was never freed: {answer:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Many requests sharing ids at once: each gets its own answer or a refusal, never another's.
    let mut tasks = Vec::new();
    for round in 0..14_u64 {
        let mut client = Client::connect(server.addr).await;
        client.session = Some(session.clone());
        tasks.push(tokio::spawn(async move {
            let (method, id) = if round % 2 == 0 {
                ("ping", 7)
            } else {
                ("tools/list", 7)
            };
            let body = json!({"jsonrpc": "2.0", "id": id, "method": method}).to_string();
            let answer = client
                .post(&[("mcp-protocol-version", "2025-11-25")], &body)
                .await;
            (method, answer)
        }));
    }
    for task in tasks {
        let (method, answer) = crate::common::bounded("a concurrent answer", task)
            .await
            .expect("the task ends");
        if answer.status == 400 {
            assert_json_rpc_error(&answer, 400, -32600);
            continue;
        }
        let message = answer.message();
        assert_eq!(message["id"], json!(7), "{answer:?}");
        let is_tool_list = message["result"]["tools"].is_array();
        assert_eq!(
            is_tool_list,
            method == "tools/list",
            "{method} got {message}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_without_a_stream_are_one_json_body_and_delete_answers_204() {
    let server = Server::start(&[]).await;
    let mut client = Client::connect(server.addr).await;
    for id in 0..3 {
        let answer = client.post(STATELESS_HEADERS, &stateless_whoami(id)).await;
        assert_whoami(&answer);
        assert_eq!(
            answer.header("content-type"),
            "application/json",
            "{answer:?}"
        );
    }
    let initialized = client.initialize().await;
    assert_eq!(
        initialized.header("content-type"),
        "application/json",
        "{initialized:?}"
    );
    let answer = client.whoami(1).await;
    assert_whoami(&answer);
    assert_eq!(
        answer.header("content-type"),
        "application/json",
        "{answer:?}"
    );
    let session = client.session.clone().expect("a session");
    let delete = hyper::Request::delete("/mcp")
        .header("host", server.addr.to_string())
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .body(http_body_util::Full::new(hyper::body::Bytes::new()))
        .expect("a request");
    let answer = client.send(delete).await;
    assert_eq!(answer.status, 204, "{answer:?}");
    assert_json_rpc_error(&client.whoami(2).await, 404, -32600);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_framing_and_hosts_are_the_clients_errors() {
    let server = Server::start(&[]).await;
    let addr = server.addr;
    for size in ["zz", "-1", "123456789012345678"] {
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json, text/event-stream\r\n\
             Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n{size}\r\n{{}}\r\n0\r\n\r\n"
        );
        let answer = raw_exchange(addr, request.as_bytes()).await;
        assert!(
            answer.starts_with("HTTP/1.1 400"),
            "chunk size {size}: {answer}"
        );
    }
    for hosts in [
        format!("Host: {addr}\r\nHost: evil.example.com\r\n"),
        "Host: localhost:99999\r\n".to_owned(),
    ] {
        let request = format!(
            "POST /mcp HTTP/1.1\r\n{hosts}Accept: application/json, text/event-stream\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{INITIALIZE}",
            INITIALIZE.len()
        );
        let answer = raw_exchange(addr, request.as_bytes()).await;
        assert!(answer.starts_with("HTTP/1.1 400"), "{hosts}: {answer}");
        assert!(
            raw_body(&answer)
                .as_object()
                .is_some_and(|o| o.contains_key("id"))
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_error_on_2026_07_28_carries_an_id_member() {
    let server = Server::start(&[]).await;
    let mut client = Client::connect(server.addr).await;
    let version = ("mcp-protocol-version", "2026-07-28");
    // A notification without the `Mcp-Method` header.
    let notification = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let answer = client.post(&[version], notification).await;
    if answer.status >= 400 {
        assert_error_with_id(&answer);
    }
    // A header that disagrees with the body.
    let answer = client
        .post(
            &[
                version,
                ("mcp-method", "tools/list"),
                ("mcp-name", "core_get_current_user"),
            ],
            &stateless_whoami(5),
        )
        .await;
    assert!(answer.status >= 400, "{answer:?}");
    let message: Value = serde_json::from_str(&answer.body).expect("a JSON body");
    assert!(
        message.as_object().is_some_and(|o| o.contains_key("id")),
        "{message}"
    );
    // A posted response.
    let answer = client
        .post(
            &[version, ("mcp-method", "x")],
            r#"{"jsonrpc":"2.0","id":9,"result":{}}"#,
        )
        .await;
    assert!(answer.status >= 400, "{answer:?}");
    let message: Value = serde_json::from_str(&answer.body).expect("a JSON body");
    assert!(
        message.as_object().is_some_and(|o| o.contains_key("id")),
        "{message}"
    );
}
