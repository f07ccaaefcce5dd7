//! The navigation walk end to end, at the same URLs for an agent and a person: the agent over
//! MCP (streamable HTTP) and the person in a real browser, Debian's Chromium driven through
//! `chromedriver` (WebDriver), both against one `switchboard serve --http --navigation beside`.
//!
//! 1. The agent navigates `/`, then the seeded week, then an open shift.
//! 2. Sam, a member of staff working through MCP as himself, claims an open shift, and the next
//!    page no longer offers `claim`.
//! 3. The agent proposes to assign another open shift to sam, an assignment only a manager
//!    may make, and gets the proposal's URL back.
//! 4. Mark, the manager, signs in in Chromium, opens that URL and approves it there; the
//!    approval page is saved as a screenshot under `target/`.
//! 5. The agent navigates again and sees sam on the shift.
//!
//! `cargo xtask test` installs `chromium` and `chromium-driver` when they are missing, as
//! `.ci/run` does.

use std::{
    net::{SocketAddr, TcpListener},
    process::Stdio,
    time::Duration,
};

use fantoccini::{ClientBuilder, Locator};
use rmcp::{
    RoleClient, ServiceExt as _,
    model::{CallToolRequestParams, CallToolResult},
    service::RunningService,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};

use crate::{
    common::{TempFile, bounded},
    http_client::Server,
};

const AGENT_TOKEN: &str = "agent-mark-token";
const SAM_TOKEN: &str = "sam-person-token";
const MARK_TOKEN: &str = "mark-person-token";

/// Token hashes (SHA-256 of the tokens above) and who each one is.
const TOKENS: &str = r#"
[[token]]
sha256 = "462adc12851b4611cc0aae9267f9bfb60cd008bb47555820618a6c2af3f72c5e"
name = "mark's agent"
org = "acme"
user = "mark"
roles = ["manager"]

[[token]]
sha256 = "7aabe9c53aba4013979114d3efffc5509fa2aed4fb70886b0fafea525dff75c6"
org = "acme"
user = "sam"
roles = ["staff"]
initiator = "human"

[[token]]
sha256 = "87a2c295029d0ff9ec8c147402439a5ea675459c304ab79f6425bbc41a743644"
org = "acme"
user = "mark"
roles = ["manager"]
initiator = "human"
"#;

/// Tuesday's evening shift, open in the seed.
const SAM_CLAIMS: &str = "/roster/shifts/acme-2026-11-24-pm";
/// Thursday's evening shift, open in the seed.
const AGENT_PROPOSES: &str = "/roster/shifts/acme-2026-11-26-pm";

type Client = RunningService<RoleClient, ()>;

async fn mcp_client(addr: SocketAddr, token: &str) -> Client {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("http://{addr}/mcp"))
            .auth_header(token),
    );
    bounded("an MCP client connects", ().serve(transport))
        .await
        .expect("the MCP handshake")
}

async fn call(client: &Client, tool: &str, arguments: Value) -> CallToolResult {
    let arguments = arguments.as_object().cloned().unwrap_or_default();
    bounded(
        "a tools/call",
        client.call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments)),
    )
    .await
    .expect("a tool result")
}

/// The `structuredContent` of a successful call.
fn structured(result: &CallToolResult) -> Value {
    assert_ne!(result.is_error, Some(true), "{result:?}");
    result
        .structured_content
        .clone()
        .unwrap_or_else(|| panic!("structuredContent: {result:?}"))
}

fn actions(page: &Value) -> Vec<String> {
    page["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .filter_map(|action| action["name"].as_str().map(str::to_owned))
        .collect()
}

/// A free loopback port for chromedriver.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free port")
}

/// `chromedriver` on a free port, killed on drop, once it accepts connections.
async fn chromedriver() -> (tokio::process::Child, u16) {
    let port = free_port();
    let child = tokio::process::Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect(
            "chromedriver runs: `cargo xtask test` installs Debian's chromium and \
             chromium-driver, or run `apt-get install chromium chromium-driver`",
        );
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return (child, port);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("chromedriver did not listen on port {port} within 10 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_approves_in_a_browser_what_an_agent_proposed_over_mcp() {
    let tokens = TempFile::new(TOKENS);
    let server = Server::start(&["--tokens", tokens.path(), "--navigation", "beside"]).await;
    let agent = mcp_client(server.addr, AGENT_TOKEN).await;
    let sam = mcp_client(server.addr, SAM_TOKEN).await;

    // 1. The agent walks from the home page to an open shift.
    let home = structured(&call(&agent, "navigate", json!({"url": "/"})).await);
    assert!(
        home["content"]
            .as_str()
            .unwrap_or_default()
            .contains("(/roster)"),
        "{home}"
    );
    let week = structured(
        &call(
            &agent,
            "navigate",
            json!({"url": "/roster/weeks/2026-11-23"}),
        )
        .await,
    );
    assert!(
        week["content"]
            .as_str()
            .unwrap_or_default()
            .contains(SAM_CLAIMS),
        "the week links its shifts: {week}"
    );

    // 2. Sam claims an open shift as himself; `claim` is gone from the next page.
    let shift = structured(&call(&sam, "navigate", json!({"url": SAM_CLAIMS})).await);
    assert_eq!(actions(&shift), ["claim"]);
    let claimed = structured(
        &call(
            &sam,
            "execute_action",
            json!({"url": SAM_CLAIMS, "action": "claim", "page_state": shift["page_state"]}),
        )
        .await,
    );
    assert_eq!(claimed["result"]["assignee"], "sam");
    assert!(
        !actions(&claimed["next"]).contains(&"claim".to_owned()),
        "{claimed}"
    );

    // 3. The agent proposes an assignment only a manager may make.
    let open = structured(&call(&agent, "navigate", json!({"url": AGENT_PROPOSES})).await);
    assert_eq!(actions(&open), ["assign"]);
    assert_eq!(open["actions"][0]["mode"], "propose");
    let proposed = structured(
        &call(
            &agent,
            "execute_action",
            json!({"url": AGENT_PROPOSES, "action": "assign", "params": {"user_id": "sam"}}),
        )
        .await,
    );
    let proposal_url = proposed["next_url"]
        .as_str()
        .expect("a next URL")
        .to_owned();
    assert!(proposal_url.starts_with("/proposals/"), "{proposed}");

    // 4. Mark opens that URL in Chromium, signs in, and approves it there.
    let (_driver, port) = chromedriver().await;
    let capabilities = json!({
        "goog:chromeOptions": {
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
        }
    });
    let capabilities = capabilities.as_object().cloned().unwrap_or_default();
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    let browser = bounded(
        "a Chromium session",
        ClientBuilder::new(connector)
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{port}")),
    )
    .await
    .expect("chromedriver starts Chromium");
    let base = format!("http://{}", server.addr);
    browser
        .goto(&format!("{base}{proposal_url}"))
        .await
        .expect("the proposal's URL opens");
    // Not signed in yet: the page sends the browser to the sign-in form.
    browser
        .find(Locator::Css("input[name=token]"))
        .await
        .expect("the sign-in form")
        .send_keys(MARK_TOKEN)
        .await
        .expect("the token is typed");
    browser
        .find(Locator::Css("form[action='/sign-in'] button[type=submit]"))
        .await
        .expect("the sign-in button")
        .click()
        .await
        .expect("signed in");
    // A click returns before the page it leads to has loaded: wait for that page.
    let page = page_showing(&browser, "waiting for a decision").await;
    let url = browser.current_url().await.expect("a URL");
    assert_eq!(
        url.path(),
        proposal_url,
        "back on the proposal's page: {page}"
    );
    browser
        .find(Locator::Css(
            "form.action:has(input[value='approve']) button[type=submit]",
        ))
        .await
        .expect("an approve button")
        .click()
        .await
        .expect("approved");
    page_showing(&browser, "approved by").await;
    let screenshot = browser.screenshot().await.expect("a screenshot");
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("approval-page.png");
    std::fs::write(&path, screenshot).expect("the screenshot is saved");
    browser.close().await.expect("the browser closes");

    // 5. The agent sees the new state.
    let after = structured(&call(&agent, "navigate", json!({"url": AGENT_PROPOSES})).await);
    assert!(
        after["content"]
            .as_str()
            .unwrap_or_default()
            .contains("[sam](/roster/users/sam)"),
        "{after}"
    );
    let _ = agent.cancel().await;
    let _ = sam.cancel().await;
}

/// The browser's page once it shows `text`: a click returns before the page it leads to has
/// loaded, so the page is read again until it does (within `common::LIMIT`).
async fn page_showing(browser: &fantoccini::Client, text: &str) -> String {
    let mut last = String::new();
    let shown = tokio::time::timeout(crate::common::LIMIT, async {
        loop {
            last = browser.source().await.expect("the page");
            if last.contains(text) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(
        shown.is_ok(),
        "the page never showed {text:?}; it last was:\n{last}"
    );
    last
}
