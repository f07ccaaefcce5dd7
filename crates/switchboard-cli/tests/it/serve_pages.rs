//! `switchboard serve --http` serves the navigation pages beside `/mcp`: the same server, the
//! same port, HTML for a browser and markdown for `Accept: text/markdown`, while `/mcp` keeps
//! answering MCP.

use http_body_util::Full;
use hyper::{Request, body::Bytes};

use crate::http_client::{Client, Server};

fn get(addr: std::net::SocketAddr, path: &str, accept: &str) -> Request<Full<Bytes>> {
    Request::get(path)
        .header("host", addr.to_string())
        .header("accept", accept)
        .body(Full::new(Bytes::new()))
        .expect("a request")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_are_served_beside_mcp() {
    let server = Server::start(&[]).await;
    let mut client = Client::connect(server.addr).await;

    let home = client.send(get(server.addr, "/", "text/html")).await;
    assert_eq!(home.status, 200, "{home:?}");
    assert_eq!(home.header("content-type"), "text/html; charset=utf-8");
    assert_eq!(home.header("vary"), "Accept");
    assert!(home.body.contains("<h1>Home</h1>"), "{}", home.body);
    assert!(home.body.contains("acme/alice"), "{}", home.body);

    let week = client
        .send(get(
            server.addr,
            "/roster/weeks/2026-11-23",
            "text/markdown",
        ))
        .await;
    assert_eq!(week.status, 200, "{week:?}");
    assert_eq!(week.header("content-type"), "text/markdown; charset=utf-8");
    assert!(week.body.contains("`clear_week`"), "{}", week.body);

    let missing = client.send(get(server.addr, "/nowhere", "text/html")).await;
    assert_eq!(missing.status, 404);

    let initialized = client.initialize().await;
    assert_eq!(initialized.status, 200, "{initialized:?}");
}
