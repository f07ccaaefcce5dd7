//! Navigation over the sample domains: pages at URLs, the actions each caller is offered
//! there, and actions run through the registry with the URL's parameters bound.
//!
//! The seeded week (Monday 2026-11-23) has open shifts: Tuesday's evening shift
//! `acme-2026-11-24-pm` is one. `sam` is staff in acme, `mark` its manager, `gina` globex's
//! admin.
//!
//! The property test also sends `navigate` and `execute_action` over MCP (`switchboard-mcp`
//! over a pipe, one JSON-RPC message per line), where the server refuses some calls itself
//! before the navigator is asked: those must leave their one record too, and a refusal the
//! navigator made and recorded must not be recorded again.

use proptest::prelude::*;
use serde_json::{Value, json};
use switchboard::{ErrorKind, Initiator, InvokeError, audit::Outcome};
use switchboard_integration_tests::{audit_records, boot, ctx, recorrelated};
use switchboard_navigation::{ActionMode, NavError, Navigator, PageView};
use tokio::io::{
    AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};

const OPEN_SHIFT: &str = "/roster/shifts/acme-2026-11-24-pm";

async fn navigator() -> (switchboard::Switchboard, Navigator) {
    let runtime = boot().await;
    let navigator = Navigator::new(runtime.registry.clone()).expect("the sample pages are valid");
    (runtime, navigator)
}

fn action_names(page: &PageView) -> Vec<&str> {
    page.actions.iter().map(|action| action.name).collect()
}

#[tokio::test]
async fn home_lists_the_pages_without_parameters() {
    let (_runtime, navigator) = navigator().await;
    let sam = ctx("acme", "sam", &["staff"], Initiator::Human);
    let home = navigator.navigate("/", &sam).await.expect("home");
    for link in ["(/me)", "(/people)", "(/roster)"] {
        assert!(home.content.contains(link), "{link} in {}", home.content);
    }
    assert!(home.content.contains("`/roster/shifts/{shift_id}`"));
    assert!(home.markdown().starts_with("# Home\n"));
}

#[tokio::test]
async fn an_open_shift_offers_claim_and_claiming_takes_it_away() {
    let (runtime, navigator) = navigator().await;
    let sam = ctx("acme", "sam", &["staff"], Initiator::Human);

    let page = navigator
        .navigate(OPEN_SHIFT, &sam)
        .await
        .expect("the shift page");
    assert_eq!(page.route, "/roster/shifts/{shift_id}");
    assert_eq!(
        action_names(&page),
        ["claim"],
        "staff may claim, not assign"
    );
    let claim = &page.actions[0];
    assert_eq!(claim.mode, ActionMode::Run);
    assert!(
        claim.params.is_empty(),
        "the URL binds the shift: {claim:?}"
    );
    assert!(page.content.contains("nobody: the shift is open"));
    insta::assert_snapshot!("open_shift_for_staff", page.markdown());

    let outcome = navigator
        .execute_action(OPEN_SHIFT, "claim", json!({}), None, &sam)
        .await
        .expect("sam claims the open shift");
    assert_eq!(outcome.tool, "roster_claim_shift");
    assert_eq!(outcome.result["assignee"], "sam");
    assert_eq!(outcome.next_url, OPEN_SHIFT);
    assert_eq!(
        action_names(&outcome.next),
        ["propose_swap"],
        "claim is gone"
    );

    // A second claim is refused before anything runs, naming what is available, and audited.
    let again = recorrelated(sam.clone());
    let error = navigator
        .execute_action(OPEN_SHIFT, "claim", json!({}), None, &again)
        .await
        .expect_err("the shift is taken");
    let NavError::Invoke(InvokeError::GateRefused { tool, error }) = &error else {
        panic!("expected action_unavailable, got {error:?}")
    };
    assert_eq!(tool, "roster_claim_shift");
    assert_eq!(error.code(), "action_unavailable");
    assert!(error.message().contains("`propose_swap`"), "{error}");
    let records = audit_records(&runtime.registry, &again).await;
    let last = records.last().expect("the refusal is audited");
    assert_eq!(&*last.tool, "roster_claim_shift");
    assert_eq!(last.outcome, Outcome::Error(ErrorKind::GateRefused));
}

#[tokio::test]
async fn an_agent_is_offered_changes_as_proposals() {
    let (_runtime, navigator) = navigator().await;
    let agent = ctx("acme", "mark", &["manager"], Initiator::Agent);
    let page = navigator
        .navigate(OPEN_SHIFT, &agent)
        .await
        .expect("the shift page");
    assert_eq!(action_names(&page), ["assign"], "a claim is a person's own");
    assert!(
        page.actions
            .iter()
            .all(|action| action.mode == ActionMode::Propose)
    );
    let assign = &page.actions[0];
    assert_eq!(
        assign
            .params
            .iter()
            .map(|param| param.name.as_str())
            .collect::<Vec<_>>(),
        ["user_id"]
    );

    let outcome = navigator
        .execute_action(
            OPEN_SHIFT,
            "assign",
            json!({"user_id": "sam"}),
            None,
            &agent,
        )
        .await
        .expect("the agent's assignment becomes a proposal");
    let proposal = outcome.proposal.expect("a proposal");
    assert_eq!(&*proposal.tool, "roster_assign_shift");
    assert_eq!(proposal.params["shift_id"], "acme-2026-11-24-pm");
    // Nothing changed yet: the agent is sent to the proposal, and the shift is still open.
    assert_eq!(outcome.next.route, "/proposals/{proposal_id}");
    let shift = navigator
        .navigate(OPEN_SHIFT, &agent)
        .await
        .expect("the shift");
    assert!(shift.content.contains("nobody: the shift is open"));
}

#[tokio::test]
async fn a_restricted_action_needs_a_confirming_person() {
    let (_runtime, navigator) = navigator().await;
    let admin = ctx("acme", "alice", &["admin"], Initiator::Human);
    let week = navigator
        .navigate("/roster/weeks/2026-11-23", &admin)
        .await
        .expect("the seeded week");
    assert_eq!(action_names(&week), ["clear_week"]);
    assert_eq!(week.actions[0].mode, ActionMode::Confirm);
    assert!(
        week.content
            .contains("[acme-2026-11-24-pm](/roster/shifts/acme-2026-11-24-pm)")
    );
    let agent = ctx("acme", "alice", &["admin"], Initiator::Agent);
    let week = navigator
        .navigate("/roster/weeks/2026-11-23", &agent)
        .await
        .expect("week");
    assert!(
        action_names(&week).is_empty(),
        "an agent never gets a restricted action"
    );
}

#[tokio::test]
async fn bound_parameters_cannot_be_overridden_and_the_refusal_is_audited() {
    let (runtime, navigator) = navigator().await;
    let sam = ctx("acme", "sam", &["staff"], Initiator::Human);
    let error = navigator
        .execute_action(
            OPEN_SHIFT,
            "claim",
            json!({"shift_id": "acme-2026-11-23-am"}),
            None,
            &sam,
        )
        .await
        .expect_err("the URL binds the shift");
    let NavError::Invoke(InvokeError::InvalidInput { errors, .. }) = &error else {
        panic!("expected invalid_input, got {error:?}")
    };
    assert_eq!(errors[0].path, "/shift_id");
    let records = audit_records(&runtime.registry, &sam).await;
    assert_eq!(
        records.last().map(|record| record.outcome),
        Some(Outcome::Error(ErrorKind::InvalidInput))
    );
    // `org_id` is refused as everywhere.
    let error = navigator
        .execute_action(
            OPEN_SHIFT,
            "claim",
            json!({"org_id": "globex"}),
            None,
            &recorrelated(sam),
        )
        .await
        .expect_err("org_id");
    assert_eq!(error.kind(), "org_id_not_allowed");
}

#[tokio::test]
async fn another_organisations_shift_is_not_found() {
    let (_runtime, navigator) = navigator().await;
    let gina = ctx("globex", "gina", &["admin"], Initiator::Human);
    let error = navigator
        .navigate(OPEN_SHIFT, &gina)
        .await
        .expect_err("not globex's");
    let missing = navigator
        .navigate("/roster/shifts/globex-no-such-shift", &gina)
        .await
        .expect_err("no such shift");
    assert_eq!(error.kind(), "not_found");
    assert_eq!(missing.kind(), "not_found");
    assert!(
        !error.to_string().contains("acme-2026-11-24-pm is"),
        "{error}"
    );
}

#[tokio::test]
async fn bad_urls_are_refused_with_a_way_forward() {
    let (_runtime, navigator) = navigator().await;
    let sam = ctx("acme", "sam", &["staff"], Initiator::Human);
    for url in ["/roster/../me", "/roster/%2e%2e/me", "//me", "me"] {
        let error = navigator.navigate(url, &sam).await.expect_err(url);
        assert_eq!(error.kind(), "bad_url", "{url}: {error}");
    }
    let error = navigator
        .navigate("/roster/shift/acme-2026-11-24-pm", &sam)
        .await
        .expect_err("a typo in the route");
    let NavError::NoSuchPage { nearest, .. } = &error else {
        panic!("expected no_such_page, got {error:?}")
    };
    assert_eq!(nearest[0], "/roster/shifts/{shift_id}", "{error}");
    let error = navigator
        .navigate("/roster/weeks/2026-11-24", &sam)
        .await
        .expect_err("not a Monday");
    assert_eq!(error.kind(), "invalid_params");
    assert!(error.to_string().contains("2026-11-23"), "{error}");
    let error = navigator
        .navigate("/roster/weeks/soon", &sam)
        .await
        .expect_err("not a date");
    assert_eq!(error.kind(), "invalid_params");
}

#[tokio::test]
async fn a_page_read_is_audited_as_the_callers_call() {
    let (runtime, navigator) = navigator().await;
    let sam = ctx("acme", "sam", &["staff"], Initiator::Human);
    navigator.navigate("/me", &sam).await.expect("me");
    let records = audit_records(&runtime.registry, &sam).await;
    let tools: Vec<&str> = records.iter().map(|record| &*record.tool).collect();
    assert_eq!(tools, ["core_get_current_user"]);
    assert_eq!(records[0].outcome, Outcome::Ok);
}

#[tokio::test]
async fn an_action_on_a_page_that_changed_since_is_refused_with_what_changed() {
    let (_runtime, navigator) = navigator().await;
    let sam = ctx("acme", "sam", &["staff"], Initiator::Human);
    let mark = ctx("acme", "mark", &["manager"], Initiator::Human);
    let seen = navigator
        .navigate(OPEN_SHIFT, &mark)
        .await
        .expect("the shift page");
    navigator
        .execute_action(OPEN_SHIFT, "claim", json!({}), Some(&seen.version), &sam)
        .await
        .expect("sam claims it first");
    let error = navigator
        .execute_action(
            OPEN_SHIFT,
            "assign",
            json!({"user_id": "mark"}),
            Some(&seen.version),
            &recorrelated(mark),
        )
        .await
        .expect_err("mark saw the shift open");
    assert_eq!(error.kind(), "page_changed");
    let NavError::Stale { changed, .. } = &error else {
        panic!("expected page_changed, got {error:?}")
    };
    assert_eq!(changed, &["assignee"]);
    assert!(
        error.to_string().contains("navigate to it again"),
        "{error}"
    );
}

#[tokio::test]
async fn an_agents_proposal_is_approved_by_a_person_on_its_page() {
    let (_runtime, navigator) = navigator().await;
    let agent = ctx("acme", "mark", &["manager"], Initiator::Agent);
    let outcome = navigator
        .execute_action(
            OPEN_SHIFT,
            "assign",
            json!({"user_id": "sam"}),
            None,
            &agent,
        )
        .await
        .expect("the agent's assignment becomes a proposal");
    let proposal = outcome.proposal.expect("a proposal");
    assert_eq!(outcome.next_url, format!("/proposals/{}", proposal.id));
    assert!(
        outcome.next.actions.is_empty(),
        "an agent decides nothing: {:?}",
        outcome.next.actions
    );

    let home = navigator
        .navigate("/proposals", &agent)
        .await
        .expect("the list");
    assert!(
        home.content
            .contains(&format!("(/proposals/{})", proposal.id))
    );

    let mark = ctx("acme", "mark", &["manager"], Initiator::Human);
    let page = navigator
        .navigate(&outcome.next_url, &mark)
        .await
        .expect("the proposal's page");
    assert_eq!(action_names(&page), ["approve", "reject"]);
    assert!(page.content.contains("waiting for a decision"));
    let approved = navigator
        .execute_action(&outcome.next_url, "approve", json!({}), None, &mark)
        .await
        .expect("mark approves");
    assert_eq!(approved.result["assignee"], "sam");
    assert!(approved.next.actions.is_empty(), "decided once");
    assert!(approved.next.content.contains("approved by `mark`"));

    let shift = navigator
        .navigate(OPEN_SHIFT, &agent)
        .await
        .expect("the shift");
    assert!(
        shift.content.contains("[sam](/roster/users/sam)"),
        "{}",
        shift.content
    );

    let gina = ctx("globex", "gina", &["admin"], Initiator::Human);
    let error = navigator
        .navigate(&outcome.next_url, &gina)
        .await
        .expect_err("another organisation's proposal");
    assert_eq!(error.kind(), "not_found");
}

#[tokio::test]
async fn a_rejection_needs_a_reason() {
    let (_runtime, navigator) = navigator().await;
    let agent = ctx("acme", "mark", &["manager"], Initiator::Agent);
    let outcome = navigator
        .execute_action(
            OPEN_SHIFT,
            "assign",
            json!({"user_id": "sam"}),
            None,
            &agent,
        )
        .await
        .expect("a proposal");
    let alice = ctx("acme", "alice", &["admin"], Initiator::Human);
    let error = navigator
        .execute_action(&outcome.next_url, "reject", json!({}), None, &alice)
        .await
        .expect_err("no feedback");
    assert_eq!(error.kind(), "invalid_input");
    let rejected = navigator
        .execute_action(
            &outcome.next_url,
            "reject",
            json!({"feedback": "sam is off that day"}),
            None,
            &recorrelated(alice),
        )
        .await
        .expect("rejected with a reason");
    assert!(rejected.next.content.contains("sam is off that day"));
    let shift = navigator
        .navigate(OPEN_SHIFT, &agent)
        .await
        .expect("the shift");
    assert!(shift.content.contains("nobody: the shift is open"));
}

/// URL segments: real ids of both organisations, route words, traversal and garbage.
fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("roster".to_owned()),
        Just("shifts".to_owned()),
        Just("weeks".to_owned()),
        Just("users".to_owned()),
        Just("proposals".to_owned()),
        Just("me".to_owned()),
        Just("acme-2026-11-24-pm".to_owned()),
        Just("globex-2026-11-24-pm".to_owned()),
        Just("2026-11-23".to_owned()),
        Just("sam".to_owned()),
        Just("..".to_owned()),
        Just("%2e%2e".to_owned()),
        Just("%2F".to_owned()),
        Just(String::new()),
        "[a-z0-9%._-]{1,12}",
        ".{0,20}",
    ]
}

/// An MCP client of a server offering navigation beside the plain tools, over a pipe.
struct McpPipe {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    writer: WriteHalf<DuplexStream>,
    next_id: u64,
}

impl McpPipe {
    /// Serves `navigator` to globex's admin gina and starts the session.
    async fn start(navigator: &Navigator) -> Self {
        let identity = switchboard_mcp::Identity::agent("globex", "gina")
            .with_role("admin")
            .with_initiator(Initiator::Human);
        let server = switchboard_mcp::McpServer::new(navigator.registry().clone(), identity)
            .with_navigation(navigator.clone(), switchboard_mcp::NavigationMode::Beside);
        let (client, server_end) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(server_end);
        tokio::spawn(switchboard_mcp::serve_io_with(server, read, write));
        let (client_read, writer) = tokio::io::split(client);
        let mut pipe = Self {
            lines: BufReader::new(client_read).lines(),
            writer,
            next_id: 0,
        };
        let initialize = json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "navigation-proptest", "version": "1"}});
        pipe.request("initialize", initialize, json!({})).await;
        pipe.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        pipe
    }

    async fn send(&mut self, message: &Value) {
        let line = format!("{message}\n");
        self.writer
            .write_all(line.as_bytes())
            .await
            .expect("the MCP server reads");
    }

    /// Sends `method` with `params` and `meta`, and returns its answer.
    async fn request(&mut self, method: &str, mut params: Value, meta: Value) -> Value {
        self.next_id += 1;
        params["_meta"] = meta;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let line = self
                .lines
                .next_line()
                .await
                .expect("the pipe is readable")
                .expect("the MCP server answers");
            let message: Value = serde_json::from_str(&line).expect("the MCP server writes JSON");
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    /// Calls `navigate` with `url` as the call of `traceparent` (its correlation id), and
    /// returns the result.
    async fn navigate(&mut self, url: &str, traceparent: &str) -> Value {
        let params = json!({"name": "navigate", "arguments": {"url": url}});
        let answer = self
            .request("tools/call", params, json!({"traceparent": traceparent}))
            .await;
        answer["result"].clone()
    }

    /// Calls `execute_action` with `arguments` as the call of `traceparent` (its correlation
    /// id), and returns the result.
    async fn execute_action(&mut self, arguments: Value, traceparent: &str) -> Value {
        let params = json!({"name": "execute_action", "arguments": arguments});
        let answer = self
            .request("tools/call", params, json!({"traceparent": traceparent}))
            .await;
        answer["result"].clone()
    }
}

/// The kinds of the refusals the navigator makes itself, each recorded once under the tool
/// name of the call it refuses (`navigate`, or the action's name); any other refusal is a
/// call's the registry refused, recorded once by the registry.
const NAVIGATOR_REFUSALS: [&str; 6] = [
    "bad_url",
    "no_such_page",
    "not_found",
    "invalid_params",
    "page_changed",
    "missing_context",
];

/// Checks that `records` (those of one call of `tool`, refused with `kind`, or not refused
/// when `kind` is `None`) hold exactly one record of the refusal and none of a refusal that
/// did not happen: under `tool` for the navigator's own refusals; else none under `tool`,
/// the registry's record of the refused call being the one.
fn one_record_per_refusal(
    records: &[switchboard::audit::AuditRecord],
    tool: &str,
    kind: Option<&str>,
) -> Result<(), TestCaseError> {
    let under_tool = records
        .iter()
        .filter(|record| &*record.tool == tool)
        .count();
    match kind {
        Some(kind) if NAVIGATOR_REFUSALS.contains(&kind) => {
            prop_assert_eq!(under_tool, 1, "{} refused {}: {:?}", tool, kind, records);
        }
        Some(kind) => {
            prop_assert_eq!(under_tool, 0, "{} refused {}: {:?}", tool, kind, records);
            prop_assert_eq!(
                records
                    .iter()
                    .filter(|record| record.outcome.as_str() == kind)
                    .count(),
                1,
                "{} refused {} by the registry: {:?}",
                tool,
                kind,
                records
            );
        }
        None => prop_assert_eq!(under_tool, 0, "{} answered: {:?}", tool, records),
    }
    Ok(())
}

/// A W3C `traceparent` no other call of this test uses: the correlation id of one MCP call.
fn traceparent(n: u64) -> String {
    format!("00-{:032x}-{:016x}-01", 0xbeef_0000_u64 + n, n + 1)
}

#[test]
fn random_urls_never_panic_never_leak_and_every_action_leaves_one_record() {
    let tokio_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime starts");
    let (runtime, navigator) = tokio_runtime.block_on(navigator());
    // The proptest body is a `Fn`: the pipe and the count of its calls live in cells.
    let mcp = std::cell::RefCell::new(tokio_runtime.block_on(McpPipe::start(&navigator)));
    let mcp_calls = std::cell::Cell::new(0_u64);
    let strategy = (
        prop::collection::vec(segment(), 0..5),
        prop_oneof![
            Just("claim"),
            Just("assign"),
            Just("clear_week"),
            Just("nope")
        ],
    );

    proptest!(ProptestConfig::with_cases(96), |((segments, action) in strategy)| {
        let url = format!("/{}", segments.join("/"));
        // Over MCP, a page_state that does not open and params that are not an object are
        // refused before the navigator is asked, on any URL: one record each, all the same.
        for arguments in [
            json!({"url": url, "action": action, "params": {"user_id": "sue"}, "page_state": "x"}),
            json!({"url": url, "action": action, "params": 1}),
        ] {
            mcp_calls.set(mcp_calls.get() + 1);
            let traceparent = traceparent(mcp_calls.get());
            let result = tokio_runtime
                .block_on(mcp.borrow_mut().execute_action(arguments.clone(), &traceparent));
            prop_assert_eq!(&result["isError"], &json!(true), "{}: {}", arguments, result);
            let mut called = ctx("globex", "gina", &["admin"], Initiator::Human);
            called.correlation_id = Some(traceparent.into());
            let records = tokio_runtime.block_on(audit_records(&runtime.registry, &called));
            prop_assert_eq!(records.len(), 1, "{}: {:?}", arguments, records);
        }
        // Globex's admin, who must never see anything of acme's.
        let gina = ctx("globex", "gina", &["admin"], Initiator::Human);
        let navigated = tokio_runtime.block_on(navigator.navigate(&url, &gina));
        match &navigated {
            Ok(page) => {
                prop_assert!(!page.content.contains("acme"), "{} leaked: {}", url, page.content);
                prop_assert!(!page.data.to_string().contains("acme"), "{} leaked data", url);
            }
            // An error may echo the URL it was given, and nothing more of acme's.
            Err(error) => prop_assert!(
                url.contains("acme") || !error.to_string().contains("acme"),
                "{}",
                error
            ),
        }
        // A refused navigate leaves one record of its refusal (a bad URL, an unknown page and
        // a page not found under `navigate`), directly and over MCP alike: the MCP layer
        // records nothing more.
        let records = tokio_runtime.block_on(audit_records(&runtime.registry, &gina));
        let kind = navigated.as_ref().err().map(NavError::kind);
        one_record_per_refusal(&records, "navigate", kind)?;
        mcp_calls.set(mcp_calls.get() + 1);
        let traceparent = traceparent(mcp_calls.get());
        let result = tokio_runtime.block_on(mcp.borrow_mut().navigate(&url, &traceparent));
        let mut called = ctx("globex", "gina", &["admin"], Initiator::Human);
        called.correlation_id = Some(traceparent.into());
        let records = tokio_runtime.block_on(audit_records(&runtime.registry, &called));
        let kind = (result["isError"] == json!(true)).then(|| {
            result["_meta"][switchboard_mcp::ERROR_META_KEY]["kind"]
                .as_str()
                .unwrap_or("unknown")
                .to_owned()
        });
        prop_assert_eq!(kind.as_deref(), navigated.as_ref().err().map(NavError::kind), "{}", result);
        one_record_per_refusal(&records, "navigate", kind.as_deref())?;
        // An action on a page that loads leaves exactly one record beyond the page's reads.
        let looked = ctx("globex", "gina", &["admin"], Initiator::Human);
        if tokio_runtime.block_on(navigator.navigate(&url, &looked)).is_ok() {
            let reads = tokio_runtime.block_on(audit_records(&runtime.registry, &looked)).len();
            let acted = ctx("globex", "gina", &["admin"], Initiator::Human);
            let outcome = tokio_runtime.block_on(
                navigator.execute_action(&url, action, json!({"user_id": "sue"}), None, &acted),
            );
            let records = tokio_runtime.block_on(audit_records(&runtime.registry, &acted));
            match &outcome {
                // An action that ran leaves one record of its tool; the page it leads to is
                // then loaded, with reads of its own.
                Ok(done) => prop_assert_eq!(
                    records.iter().filter(|record| *record.tool == *done.tool).count(),
                    1,
                    "{} {}: {:?}", url, action, records
                ),
                // A proposal's page reads nothing through tools; every other page reads before
                // it acts, and the refused action adds one record.
                Err(_) => prop_assert!(
                    records.len() == reads + 1
                        || (url.starts_with("/proposals") && records.len() <= 1),
                    "{} {}: {} records after the action, {} reads", url, action, records.len(), reads
                ),
            }
        } else {
            // An action on a bad URL, an unknown page or one not found: its one record.
            let acted = ctx("globex", "gina", &["admin"], Initiator::Human);
            let outcome = tokio_runtime.block_on(
                navigator.execute_action(&url, action, json!({"user_id": "sue"}), None, &acted),
            );
            let records = tokio_runtime.block_on(audit_records(&runtime.registry, &acted));
            let kind = outcome.as_ref().err().map(NavError::kind);
            prop_assert!(kind.is_some(), "{} {}: ran on a page that does not open", url, action);
            one_record_per_refusal(&records, action, kind)?;
        }
    });
    tokio_runtime.block_on(runtime.shutdown());
}
