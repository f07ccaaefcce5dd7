//! The database fails under running nodes: real `switchboard serve --http` processes on a
//! PostgreSQL server of the test's own, which the test stops (`pg_ctl stop -m immediate`, as a
//! crash would) in the middle of a load and starts again. Nothing a node acknowledged may be
//! lost, nothing may run unaudited, no call may wait on the absent server past the stores'
//! call timeout, and the nodes must recover by themselves. A node whose database is down when
//! it starts must say so in one line and exit. A server that freezes (SIGSTOP) rather than
//! stops is the harder case: its connections stay open and every statement waits.
//!
//! With strict audit (the default for PostgreSQL) a node whose audit writer is retrying records
//! the database did not take refuses calls before they run (`audit_unavailable`: nothing ran,
//! no record); a call that ran and whose record was not written in time is `audit_failed`, and
//! its record is kept by the writer and written once the database is back.
//!
//! Each test starts a private cluster ([`TestCluster`]), never the shared server of
//! `cargo xtask test`, because it stops it.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    process::Output,
    sync::atomic::Ordering,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use switchboard_test_postgres::TestCluster;

use crate::{
    common::{bounded, switchboard},
    http_client::Client,
    postgres_load::*,
};

#[allow(
    clippy::print_stderr,
    reason = "the outage's figures (duration, recovery, calls answered and refused), for a report"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nothing_acknowledged_is_lost_when_the_database_stops_mid_load() {
    let (mut cluster, url) = blocking(private_cluster);
    let human = node(&url, &["--initiator", "human"]).await;
    let agent = node(
        &url,
        &["--initiator", "agent", "--agent-mutations", "propose"],
    )
    .await;

    let load = Load::new();
    let mut clients = Vec::new();
    for number in 0..HUMAN_CLIENTS {
        clients.push(tokio::spawn(human_client(load.clone(), human.addr, number)));
    }
    for number in 0..AGENT_CLIENTS {
        clients.push(tokio::spawn(agent_client(load.clone(), agent.addr, number)));
    }
    clients.push(tokio::spawn(decider(load.clone(), url.clone())));

    tokio::time::sleep(HEALTHY).await;
    let stopped = load.started.elapsed();
    blocking(|| cluster.stop_immediate()).expect("the server stops");
    tokio::time::sleep(OUTAGE).await;
    let restarting = Instant::now();
    blocking(|| cluster.start_again())
        .unwrap_or_else(|error| panic!("the server starts again: {error}\n{}", cluster.log()));
    let restarted = load.started.elapsed();
    let crash_recovery = restarting.elapsed();

    // The nodes recover by themselves: keep calling until each serves again, and a decision
    // goes through again.
    let recovered = |calls: &[Call], decisions: &[Decision]| {
        let human_back = calls.iter().find(|call| {
            call.node == "human" && call.sent >= restarted && call.answer.kind() == "ok"
        });
        let agent_back = calls.iter().find(|call| {
            call.node == "agent"
                && call.sent >= restarted
                && call.answer.kind() == "approval_required"
        });
        let decision_back = decisions
            .iter()
            .find(|decision| decision.sent >= restarted && decision.output.status.success());
        match (human_back, agent_back, decision_back) {
            (Some(human), Some(agent), Some(decision)) => Some(
                (human.sent + human.took)
                    .max(agent.sent + agent.took)
                    .max(decision.sent + decision.took),
            ),
            _ => None,
        }
    };
    let recovered_at = loop {
        if let Some(at) = recovered(&load.calls(), &load.decisions()) {
            break at;
        }
        assert!(
            load.started.elapsed() < restarted + RECOVERY_LIMIT,
            "the nodes did not serve again within {RECOVERY_LIMIT:?} of the database's return; \
             the last answers: {:#?}",
            load.calls().iter().rev().take(6).collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    load.stop.store(true, Ordering::Relaxed);
    for client in clients {
        bounded("a client's last call", client)
            .await
            .expect("the client finished without a panic");
    }
    let calls = load.calls();
    let decisions = load.decisions();

    // What the load met, by phase and answer.
    let phase = |sent: Duration| {
        if sent < stopped {
            "before"
        } else if sent < restarted {
            "outage"
        } else {
            "after"
        }
    };
    let mut tally: BTreeMap<(&str, String), usize> = BTreeMap::new();
    for call in &calls {
        *tally
            .entry((
                phase(call.sent),
                format!("{} {} {}", call.node, call.tool, call.answer.kind()),
            ))
            .or_default() += 1;
    }

    let slowest = calls
        .iter()
        .max_by_key(|call| call.took)
        .expect("calls were made");
    eprintln!(
        "database_faults: outage {:?} (stopped at {stopped:?}, back at {restarted:?} after \
         {crash_recovery:?} of crash recovery), served again {:?} after its return; {} calls, \
         {} decisions ({} acknowledged); slowest answer {:?} ({} {}); answers by phase: \
         {tally:?}",
        restarted - stopped,
        recovered_at.saturating_sub(restarted),
        calls.len(),
        decisions.len(),
        decisions
            .iter()
            .filter(|decision| decision.output.status.success())
            .count(),
        slowest.took,
        slowest.tool,
        slowest.answer.kind(),
    );

    // Nothing waited on the absent server past the call timeout.
    let bound = CALL_TIMEOUT + MARGIN;
    for call in &calls {
        assert!(
            call.took < bound,
            "an answer took {:?}: {call:#?}",
            call.took
        );
    }
    for decision in &decisions {
        assert!(
            decision.took < bound,
            "`approve` took {:?}: {decision:#?}",
            decision.took
        );
    }
    // The outage was met, and refused with a clear error, never a protocol error or a crash.
    let during: Vec<&Call> = calls
        .iter()
        .filter(|call| phase(call.sent) == "outage")
        .collect();
    assert!(
        during.iter().any(|call| call.answer.kind() != "ok"),
        "no call met the outage: {tally:?}"
    );
    for call in &calls {
        if let Answer::Protocol(body) = &call.answer {
            panic!("a protocol error instead of a tool result: {body}\n{call:#?}");
        }
    }
    for call in &during {
        if let Answer::Refused(error) = &call.answer {
            let message = error["message"].as_str().unwrap_or_default();
            assert!(
                OUTAGE_KINDS.contains(&call.answer.kind())
                    || call.answer.kind() == "audit_unavailable"
                    || call.answer.kind() == "approval_required",
                "a call refused for another reason than the database: {call:#?}"
            );
            if call.answer.kind() == "tool_failed" {
                assert_eq!(
                    error["code"],
                    json!("idempotency_store_unavailable"),
                    "a mutation failed for another reason than the database: {call:#?}"
                );
            }
            assert!(
                !message.is_empty() && !message.contains(cluster.password()),
                "a refusal says why, without the password: {call:#?}"
            );
        }
    }
    for decision in decisions
        .iter()
        .filter(|decision| !decision.output.status.success())
    {
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&decision.output.stdout),
            String::from_utf8_lossy(&decision.output.stderr)
        );
        assert!(
            matches!(decision.output.status.code(), Some(1 | 2))
                && said.contains("error")
                && !said.contains(cluster.password())
                && !said.contains("panicked"),
            "a refused `approve` says why in an error, without the password: {decision:#?}"
        );
    }

    // Every answered call has its record: a call's answer waits for its record to be
    // committed (strict durability). A call refused `audit_unavailable` never ran and has
    // none; one answered `audit_failed` has exactly one, kept by its node's writer and written
    // once the database was back (each node served again since, after writing what it kept).
    let records = audit_records(&url).await;
    let mut by_correlation: HashMap<&str, Vec<&Value>> = HashMap::new();
    for record in &records {
        if let Some(correlation) = record["correlation_id"].as_str() {
            by_correlation.entry(correlation).or_default().push(record);
        }
    }
    let mut acknowledged = 0;
    let mut kept = 0;
    for call in &calls {
        let kind = call.answer.kind();
        let found = by_correlation
            .get(call.traceparent.as_str())
            .map_or(0, Vec::len);
        if kind == "audit_unavailable" {
            assert_eq!(
                found, 0,
                "a call refused before it ran has a record: {call:#?}"
            );
            continue;
        }
        if kind == "audit_failed" {
            assert_eq!(found, 1, "an audit_failed call's kept record: {call:#?}");
            kept += 1;
            continue;
        }
        acknowledged += 1;
        let found = by_correlation
            .get(call.traceparent.as_str())
            .is_some_and(|found| {
                found.iter().any(|record| {
                    record["tool"] == json!(call.tool) && record["outcome"] == json!(kind)
                })
            });
        assert!(
            found,
            "an answered call has no audit record (of {} records): {call:#?}",
            records.len()
        );
    }
    assert!(acknowledged > 0, "no call was acknowledged: {tally:?}");

    // Every acknowledged proposal is kept, and every acknowledged decision too.
    let listed = read_back(&["proposals"], &url).await;
    let statuses: HashMap<&str, &str> = listed["proposals"]
        .as_array()
        .expect("proposals")
        .iter()
        .map(|proposal| {
            (
                proposal["id"].as_str().expect("an id"),
                proposal["status"].as_str().expect("a status"),
            )
        })
        .collect();
    for call in &calls {
        if let Answer::Refused(error) = &call.answer
            && error["kind"] == json!("approval_required")
        {
            let id = error["proposal_id"].as_str().expect("a proposal id");
            assert!(
                statuses.contains_key(id),
                "an acknowledged proposal is gone: {call:#?}"
            );
        }
    }
    let approved_runs: HashSet<&str> = records
        .iter()
        .filter(|record| record["action"]["event"] == json!("approved"))
        .filter_map(|record| record["action"]["id"].as_str())
        .collect();
    for decision in decisions
        .iter()
        .filter(|decision| decision.output.status.success())
    {
        let id = decision.proposal_id.as_str();
        assert_eq!(
            statuses.get(id).copied(),
            Some("approved"),
            "an acknowledged approval is not kept: {decision:#?}"
        );
        assert!(
            approved_runs.contains(id),
            "an acknowledged approval's run has no audit record: {decision:#?}"
        );
    }

    // Every acknowledged mutation replays its first result, from the database: a node that
    // started after the outage gets it, and nothing runs again.
    drop(human);
    let fresh = node(&url, &["--initiator", "human"]).await;
    let mut client = Client::connect(fresh.addr).await;
    let mutations: Vec<&Call> = calls
        .iter()
        .filter(|call| call.node == "human" && call.tool != "core_get_current_user")
        .filter(|call| call.answer.kind() == "ok")
        .collect();
    for call in &mutations {
        let again = post(&mut client, call.tool, &call.body).await;
        assert_eq!(
            again, call.answer,
            "a retry of an acknowledged mutation does not get its first result: {call:#?}"
        );
    }
    let records = audit_records(&url).await;
    for call in &mutations {
        let events: Vec<&Value> = records
            .iter()
            .filter(|record| record["correlation_id"] == json!(call.traceparent))
            .map(|record| &record["action"]["event"])
            .collect();
        assert_eq!(
            events.iter().filter(|event| **event == "executed").count(),
            1,
            "an acknowledged mutation ran other than once: {events:?}\n{call:#?}"
        );
        assert!(
            events.iter().any(|event| **event == "replayed"),
            "the retry was not a replay: {events:?}\n{call:#?}"
        );
    }
    eprintln!(
        "database_faults: {acknowledged} answered calls all have their records, and {kept} \
         audit_failed calls their kept ones; {} acknowledged mutations replayed on a fresh node",
        mutations.len()
    );
}

/// The one-line, exit-2 refusal of a command whose database is down.
fn assert_one_line_refusal(output: &Output, took: Duration, password: &str, what: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{what}: {output:?}");
    assert!(took < Duration::from_secs(5), "{what} took {took:?}");
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "{what}: one line on standard error, not {stderr:?}"
    );
    assert!(
        stderr.starts_with("error: ") && stderr.contains("cannot reach PostgreSQL at 127.0.0.1:"),
        "{what}: {stderr:?}"
    );
    assert!(
        !stderr.contains(password),
        "{what} shows the password: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{what}: {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_whose_database_is_down_at_start_exits_with_one_line() {
    let (mut cluster, url) = blocking(private_cluster);
    blocking(|| cluster.stop_immediate()).expect("the server stops");
    let password = cluster.password().to_owned();
    let identity = ["--org", "acme", "--user", "alice", "--role", "admin"];
    let stores = ["--audit", &url, "--approvals", &url];
    let mut commands: Vec<(&str, Vec<&str>)> = Vec::new();
    let mut serve = vec!["serve", "--http", "127.0.0.1:0", "--workflows", &url];
    serve.extend_from_slice(&identity);
    serve.extend_from_slice(&stores);
    commands.push(("serve --http", serve));
    let mut proposals = vec!["proposals"];
    proposals.extend_from_slice(&identity);
    proposals.extend_from_slice(&stores);
    commands.push(("proposals", proposals));
    commands.push(("audit", vec!["audit", "--audit", &url]));
    for (what, args) in commands {
        let began = Instant::now();
        let output = bounded(what, switchboard(&args).output())
            .await
            .expect("the binary runs");
        assert_one_line_refusal(&output, began.elapsed(), &password, what);
    }
    // The same database named by the config file's `[store] url`.
    let config = crate::common::TempFile::new(&format!("[store]\nurl = \"{url}\"\n"));
    let mut args = vec!["serve", "--http", "127.0.0.1:0", "--config", config.path()];
    args.extend_from_slice(&identity);
    let began = Instant::now();
    let output = bounded("serve with [store] url", switchboard(&args).output())
        .await
        .expect("the binary runs");
    assert_one_line_refusal(
        &output,
        began.elapsed(),
        &password,
        "serve with [store] url",
    );
}

/// The server processes of a running cluster: the postmaster (`postmaster.pid`'s first line)
/// and every process it started (a backend per connection, and its own workers).
fn cluster_processes(cluster: &TestCluster) -> Vec<nix::unistd::Pid> {
    let pid_file = std::fs::read_to_string(cluster.data_dir().join("postmaster.pid"))
        .expect("the running server's postmaster.pid");
    let postmaster: i32 = pid_file
        .lines()
        .next()
        .and_then(|line| line.trim().parse().ok())
        .expect("a pid on postmaster.pid's first line");
    let mut pids = vec![postmaster];
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`: the fields after the command's closing parenthesis.
        let parent = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|field| field.parse::<i32>().ok());
        if parent == Some(postmaster) {
            pids.push(pid);
        }
    }
    pids.into_iter().map(nix::unistd::Pid::from_raw).collect()
}

/// Sends `signal` to every process of the cluster.
fn signal_cluster(cluster: &TestCluster, signal: nix::sys::signal::Signal) {
    for pid in cluster_processes(cluster) {
        // A backend may have ended since the list was made.
        let _ = nix::sys::signal::kill(pid, signal);
    }
}

/// A server that stops answering without closing its connections (SIGSTOP, as a hung host or
/// a network partition would): a call may wait on it at most the stores' call timeout, and a
/// write that timed out and was tried again is stored once. A call runs several statements
/// (a gate's read, the key's claim, the tool's change, the key's completion): once one of them
/// has timed out, the others fail at once (`switchboard-postgres`'s health check), and the audit
/// writer counts a store that leaves an append unanswered for a second as failing, so a call
/// waits for its record at most a second more.
#[allow(clippy::print_stderr, reason = "the freeze's figures, for a report")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_frozen_database_fails_calls_within_the_call_timeout() {
    let (cluster, url) = blocking(private_cluster);
    let human = node(&url, &["--initiator", "human"]).await;
    let load = Load::new();
    let mut clients = Vec::new();
    for number in 0..4 {
        clients.push(tokio::spawn(human_client(load.clone(), human.addr, number)));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let frozen = load.started.elapsed();
    signal_cluster(&cluster, nix::sys::signal::Signal::SIGSTOP);
    tokio::time::sleep(FREEZE).await;
    signal_cluster(&cluster, nix::sys::signal::Signal::SIGCONT);
    let thawed = load.started.elapsed();
    tokio::time::sleep(Duration::from_secs(3)).await;
    load.stop.store(true, Ordering::Relaxed);
    for client in clients {
        bounded("a client's last call", client)
            .await
            .expect("the client finished without a panic");
    }
    let calls = load.calls();
    let mut tally: BTreeMap<String, usize> = BTreeMap::new();
    for call in &calls {
        *tally.entry(call.answer.kind().to_owned()).or_default() += 1;
    }
    let slowest = calls.iter().max_by_key(|call| call.took).expect("calls");
    eprintln!(
        "database_faults: frozen from {frozen:?} to {thawed:?}; {} calls; slowest answer {:?} \
         (sent at {:?}, {} {}); answers: {tally:?}",
        calls.len(),
        slowest.took,
        slowest.sent,
        slowest.tool,
        slowest.answer.kind()
    );
    // Every call that ran leaves exactly one record, the `audit_failed` ones included (their
    // records were kept and written after the thaw): a batch whose write timed out and was
    // tried again must not be stored twice. A call refused `audit_unavailable` never ran and
    // has none.
    let records = audit_records(&url).await;
    let mut by_correlation: HashMap<&str, usize> = HashMap::new();
    for record in &records {
        if let Some(correlation) = record["correlation_id"].as_str() {
            *by_correlation.entry(correlation).or_default() += 1;
        }
    }
    let twice: Vec<&Call> = calls
        .iter()
        .filter(|call| {
            by_correlation
                .get(call.traceparent.as_str())
                .copied()
                .unwrap_or(0)
                > 1
        })
        .collect();
    let missing: Vec<&Call> = calls
        .iter()
        .filter(|call| call.answer.kind() != "audit_unavailable")
        .filter(|call| !by_correlation.contains_key(call.traceparent.as_str()))
        .collect();
    let refused_but_recorded: Vec<&Call> = calls
        .iter()
        .filter(|call| call.answer.kind() == "audit_unavailable")
        .filter(|call| by_correlation.contains_key(call.traceparent.as_str()))
        .collect();
    eprintln!(
        "database_faults: {} records; {} calls recorded more than once; {} calls that ran \
         without a record",
        records.len(),
        twice.len(),
        missing.len()
    );
    assert!(
        missing.is_empty(),
        "calls that ran without a record: {missing:#?}"
    );
    assert!(
        refused_but_recorded.is_empty(),
        "calls refused before they ran have a record: {refused_but_recorded:#?}"
    );
    assert!(
        twice.is_empty(),
        "calls recorded more than once: {twice:#?}"
    );
    for call in &calls {
        assert!(
            call.took < CALL_TIMEOUT + MARGIN,
            "an answer took {:?}: {call:#?}",
            call.took
        );
    }
}

/// A mutation whose answer was `audit_failed` may have run before its record failed (the
/// server stopped between the run and the commit of its record). Retried on its node once the
/// database is back, it must either run now or replay a run that has its `executed` record
/// (kept by the node's audit writer and written once the database is back): no mutation runs
/// unaudited.
#[allow(clippy::print_stderr, reason = "the figures, for a report")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_mutation_refused_with_audit_failed_never_ran_unaudited() {
    let (mut cluster, url) = blocking(private_cluster);
    let human = node(&url, &["--initiator", "human"]).await;
    let load = Load::new();
    let mut clients = Vec::new();
    for number in 0..HUMAN_CLIENTS {
        clients.push(tokio::spawn(human_client(load.clone(), human.addr, number)));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    blocking(|| cluster.stop_immediate()).expect("the server stops");
    tokio::time::sleep(Duration::from_secs(1)).await;
    load.stop.store(true, Ordering::Relaxed);
    for client in clients {
        bounded("a client's last call", client)
            .await
            .expect("the client finished without a panic");
    }
    blocking(|| cluster.start_again())
        .unwrap_or_else(|error| panic!("the server starts again: {error}\n{}", cluster.log()));
    let calls = load.calls();
    let refused: Vec<&Call> = calls
        .iter()
        .filter(|call| call.tool != "core_get_current_user")
        .filter(|call| call.answer.kind() == "audit_failed")
        .collect();
    let mut client = Client::connect(human.addr).await;
    let mut retried = Vec::new();
    for call in &refused {
        // The pool reconnects by itself, and the audit writer writes what it kept; until then
        // a retry is refused again.
        let began = Instant::now();
        let answer = loop {
            let answer = post(&mut client, call.tool, &call.body).await;
            let refused = matches!(answer.kind(), "audit_failed" | "audit_unavailable");
            if !refused || began.elapsed() > RECOVERY_LIMIT {
                break answer;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        retried.push(answer);
    }
    let records = audit_records(&url).await;
    // Each call's own record is there (kept by the node's audit writer and written once the
    // database was back): records are listed newest first, and the writer writes in order, so
    // it is the last of its correlation id. A mutation that ran (its own record says
    // `executed`, or its retry was answered) has exactly one `executed` record; one whose key
    // could not be claimed (the database went away first) never ran, and has none.
    let mut unaudited = Vec::new();
    let mut never_ran = 0;
    for (call, retry) in refused.iter().zip(&retried) {
        let found: Vec<&Value> = records
            .iter()
            .filter(|record| record["correlation_id"] == json!(call.traceparent))
            .collect();
        let events: Vec<&Value> = found
            .iter()
            .map(|record| &record["action"]["event"])
            .collect();
        let executed = events.iter().filter(|event| **event == "executed").count();
        let ran = found
            .last()
            .is_some_and(|own| own["action"]["event"] == "executed")
            || retry.kind() == "ok";
        never_ran += usize::from(!ran);
        if found.is_empty() || executed != usize::from(ran) {
            unaudited.push((call, retry, events));
        }
    }
    eprintln!(
        "database_faults: {} mutations refused with audit_failed, retried ({never_ran} never \
         ran); {} without their own record or without exactly one `executed` record for a run",
        refused.len(),
        unaudited.len()
    );
    assert!(!refused.is_empty(), "no mutation met the stop");
    assert!(
        unaudited.is_empty(),
        "mutations that ran without their record (call, retry, events): {unaudited:#?}"
    );
}
