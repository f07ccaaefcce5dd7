//! Tests of the in-memory store: queries, paging, eviction accounting and concurrency.

use std::{sync::Arc, thread};

use jiff::{Timestamp, ToSpan};
use proptest::prelude::*;
use switchboard_core::{Category, CorrelationId, ErrorKind, Initiator, OrgId};

use super::*;
use crate::{digest_json, record::Outcome};

fn record(tool: &str, org: &str, correlation: &str, at: Timestamp) -> AuditRecord {
    AuditRecord {
        asks: Vec::new(),
        switch: None,
        node: None,
        id: 0,
        timestamp: at,
        tool: tool.into(),
        domain: Some("roster".into()),
        category: Some(Category::Read),
        org_id: Some(OrgId::from(org)),
        user_id: Some("u1".into()),
        session_id: Some("s1".into()),
        correlation_id: Some(CorrelationId::from(correlation)),
        initiator: Initiator::Human,
        input_hash: Some(digest_json(&serde_json::json!({})).expect("JSON has a digest")),
        output_hash: None,
        digest_error: None,
        duration_us: 7,
        outcome: Outcome::Ok,
        action: None,
    }
}

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_790_000_000 + seconds).expect("valid timestamp")
}

#[test]
fn assigns_increasing_ids_and_returns_newest_first() {
    let store = MemoryAuditStore::with_capacity(16);
    let first = store.insert(record("a", "acme", "c1", at(0)));
    let second = store.insert(record("b", "acme", "c1", at(1)));
    assert!(second > first);
    let ids: Vec<_> = store
        .select(&AuditQuery::all())
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(ids, [second, first]);
}

#[test]
fn filters_by_correlation_tool_org_outcome_and_time() {
    let store = MemoryAuditStore::with_capacity(64);
    store.insert(record("roster_list_shifts", "acme", "c1", at(0)));
    store.insert(record("core_get_current_user", "acme", "c1", at(10)));
    store.insert(record("roster_list_shifts", "globex", "c2", at(20)));
    let mut failed = record("roster_assign_shift", "globex", "c2", at(30));
    failed.outcome = Outcome::Error(ErrorKind::PermissionDenied);
    store.insert(failed);

    let tools = |query: &AuditQuery| -> Vec<String> {
        store
            .select(query)
            .iter()
            .map(|r| r.tool.to_string())
            .collect()
    };
    assert_eq!(
        tools(&AuditQuery::correlation("c1")),
        ["core_get_current_user", "roster_list_shifts"]
    );
    assert_eq!(
        tools(&AuditQuery::all().tool("roster_list_shifts")).len(),
        2
    );
    assert_eq!(
        tools(&AuditQuery::all().org("globex")),
        ["roster_assign_shift", "roster_list_shifts"]
    );
    let denied = AuditQuery {
        outcome: Some(Outcome::Error(ErrorKind::PermissionDenied)),
        ..AuditQuery::all()
    };
    assert_eq!(tools(&denied), ["roster_assign_shift"]);
    assert_eq!(
        tools(&AuditQuery::all().between(at(10), at(30))),
        ["roster_list_shifts", "core_get_current_user"]
    );
    assert!(tools(&AuditQuery::all().between(at(40), at(40) + 1.hour())).is_empty());
}

#[test]
fn pages_with_limit_and_before_id() {
    let store = MemoryAuditStore::with_capacity(64);
    let ids: Vec<_> = (0..10)
        .map(|n| store.insert(record("t", "acme", "c", at(n))))
        .collect();
    let first_page = store.select(&AuditQuery::all().limit(4));
    assert_eq!(
        first_page.iter().map(|r| r.id).collect::<Vec<_>>(),
        [ids[9], ids[8], ids[7], ids[6]]
    );
    let cursor = first_page.last().map(|r| r.id);
    let second_page = store.select(&AuditQuery {
        before_id: cursor,
        ..AuditQuery::all().limit(4)
    });
    assert_eq!(
        second_page.iter().map(|r| r.id).collect::<Vec<_>>(),
        [ids[5], ids[4], ids[3], ids[2]]
    );
    assert!(store.select(&AuditQuery::all().limit(0)).is_empty());
}

#[test]
fn counts_every_eviction() {
    let store = MemoryAuditStore::with_capacity(3);
    for n in 0..10 {
        store.insert(record("t", "acme", "c", at(n)));
    }
    let stats = store.counters();
    assert_eq!(stats.appended, 10);
    assert_eq!(stats.evicted, 7);
    assert_eq!(stats.held, 3);
    assert_eq!(stats.capacity, Some(3));
    let kept: Vec<_> = store
        .select(&AuditQuery::all())
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(kept, [10, 9, 8]);
}

#[test]
fn concurrent_writers_lose_nothing_and_readers_never_block_them() {
    const WRITERS: usize = 8;
    const PER_WRITER: usize = 2_000;
    let store = Arc::new(MemoryAuditStore::with_capacity(WRITERS * PER_WRITER));
    let reader = {
        let store = Arc::clone(&store);
        thread::spawn(move || {
            let mut seen = 0;
            while store.counters().appended < (WRITERS * PER_WRITER) as u64 {
                seen = seen.max(store.select(&AuditQuery::all().limit(100)).len());
            }
            seen
        })
    };
    let writers: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let store = Arc::clone(&store);
            thread::spawn(move || {
                for n in 0..PER_WRITER {
                    store.insert(record("t", "acme", &format!("w{writer}"), at(n as i64)));
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().expect("writer thread");
    }
    reader.join().expect("reader thread");
    let stats = store.counters();
    assert_eq!(stats.appended, (WRITERS * PER_WRITER) as u64);
    assert_eq!(stats.evicted, 0);
    assert_eq!(store.select(&AuditQuery::all()).len(), WRITERS * PER_WRITER);
    for writer in 0..WRITERS {
        assert_eq!(
            store
                .select(&AuditQuery::correlation(format!("w{writer}")))
                .len(),
            PER_WRITER
        );
    }
}

#[test]
fn concurrent_writers_past_capacity_account_for_every_record() {
    let store = Arc::new(MemoryAuditStore::with_capacity(100));
    let writers: Vec<_> = (0..4)
        .map(|_| {
            let store = Arc::clone(&store);
            thread::spawn(move || {
                for n in 0..1_000 {
                    store.insert(record("t", "acme", "c", at(n)));
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().expect("writer thread");
    }
    let stats = store.counters();
    assert_eq!(stats.appended, 4_000);
    assert_eq!(stats.held + stats.evicted, stats.appended);
    assert_eq!(store.select(&AuditQuery::all()).len() as u64, stats.held);
}

proptest! {
    /// The store keeps exactly the newest `capacity` records.
    #[test]
    fn keeps_the_newest_records(capacity in 1usize..20, tools in prop::collection::vec("[a-c]", 0..60)) {
        let store = MemoryAuditStore::with_capacity(capacity);
        for (n, tool) in tools.iter().enumerate() {
            store.insert(record(tool, "acme", "c", at(n as i64)));
        }
        let expected: Vec<String> = tools.iter().rev().take(capacity).cloned().collect();
        let kept: Vec<String> = store.select(&AuditQuery::all()).iter().map(|r| r.tool.to_string()).collect();
        prop_assert_eq!(kept, expected);
        let stats = store.counters();
        prop_assert_eq!(stats.evicted as usize, tools.len().saturating_sub(capacity));
    }
}
