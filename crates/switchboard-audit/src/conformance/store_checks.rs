//! The checks that drive a store through the [`AuditStore`] trait alone: appends and ids,
//! round trips, every query filter, paging, retention, concurrency and tenant scoping.
//!
//! Each check takes a fresh store from the factory and compares every answer with the reference
//! model in the parent module, so a check fails with the query, what came back and what should
//! have.

use std::{
    collections::BTreeSet,
    sync::atomic::{AtomicBool, Ordering},
    thread,
};

use jiff::Timestamp;
use switchboard_core::{
    Category, CorrelationId, Digest, ErrorKind, Initiator, OrgId,
    ask::{AskKind, AskOutcome, AskRecord},
};

use super::{
    Failure, ORGS, StoreFactory, TOOLS, USERS, append, at, ensure_answer, ensure_newest_first,
    expected, ids, input_digest, query, sample, seed,
};
use crate::{
    MAX_TOOL_NAME_BYTES, SWITCH_RECORD_TOOL, SwitchAction, SwitchRecord,
    record::{AuditId, AuditRecord, Outcome},
    store::{AuditQuery, AuditStore},
};

/// Ids are assigned on append, written back into the records, strictly increasing within a
/// batch and across batches; an empty batch is fine; `stats().appended` and `held` count.
pub fn append_assigns_increasing_ids(make: &StoreFactory) -> Result<(), Failure> {
    let store = make();
    let before = store.stats();
    ensure!(
        before.appended == 0 && before.held == 0,
        "a fresh store already has records: {before:?}"
    );
    let mut all_ids: Vec<AuditId> = Vec::new();
    for (batch, size) in [1, 3, 0, 50, 1].into_iter().enumerate() {
        let records = append(&*store, (0..size).map(sample).collect())?;
        let batch_ids = ids(&records);
        ensure!(
            batch_ids.iter().all(|id| *id > 0),
            "batch {batch}: ids must be assigned (non-zero): {batch_ids:?}"
        );
        all_ids.extend(batch_ids);
    }
    ensure!(
        all_ids.windows(2).all(|pair| pair[0] < pair[1]),
        "ids are not strictly increasing in append order: {all_ids:?}"
    );
    let stats = store.stats();
    ensure!(
        stats.appended == all_ids.len() as u64 && stats.held == all_ids.len() as u64,
        "after {} appends the stats say {stats:?}",
        all_ids.len()
    );
    ensure!(
        stats.evicted == 0 && stats.expired == 0,
        "nothing was evicted or expired, yet the stats say {stats:?}"
    );
    let held = query(&*store, &AuditQuery::all())?;
    let mut newest_first = all_ids;
    newest_first.reverse();
    ensure!(
        ids(&held) == newest_first,
        "query(all) returned ids {:?}, expected {newest_first:?}",
        ids(&held)
    );
    Ok(())
}

/// A record whose input could not be serialized comes back as appended: no input digest, no
/// output digest, and the reason in `digest_error`. So does one whose output alone failed.
pub fn records_without_a_digest_round_trip(make: &StoreFactory) -> Result<(), Failure> {
    let store = make();
    let no_input = AuditRecord {
        node: None,
        input_hash: None,
        output_hash: None,
        digest_error: Some(
            "input: the value cannot be serialized as JSON: key must be a string".to_owned(),
        ),
        outcome: Outcome::Error(ErrorKind::InvalidInput),
        ..sample(2)
    };
    let no_output = AuditRecord {
        node: None,
        output_hash: None,
        digest_error: Some(
            "output: the value cannot be serialized as JSON: \u{1F600} failed".to_owned(),
        ),
        outcome: Outcome::Ok,
        ..sample(3)
    };
    let appended = append(&*store, vec![sample(0), no_input, no_output, sample(4)])?;
    ensure_answer(&*store, &appended, &AuditQuery::all())?;
    Ok(())
}

/// The questions a call asked the client come back as appended, in order: a failed one with
/// its error code and no answer, an accepted one with both digests, a declined page with no
/// digest at all. The records around them in the batch, which asked nothing, come back with no
/// questions.
pub fn records_with_asks_round_trip(make: &StoreFactory) -> Result<(), Failure> {
    let store = make();
    let asked = AuditRecord {
        asks: vec![
            AskRecord {
                kind: AskKind::Sampling,
                outcome: AskOutcome::Failed,
                error: Some("client_refused".to_owned()),
                request_hash: Some(input_digest(1_001)),
                answer_hash: None,
                duration_us: 1_250,
            },
            AskRecord {
                kind: AskKind::Form,
                outcome: AskOutcome::Accepted,
                error: None,
                request_hash: Some(input_digest(1_002)),
                answer_hash: Some(input_digest(1_003)),
                duration_us: u64::MAX,
            },
        ],
        ..sample(1)
    };
    let declined = AuditRecord {
        asks: vec![AskRecord {
            kind: AskKind::Url,
            outcome: AskOutcome::Declined,
            error: None,
            request_hash: None,
            answer_hash: None,
            duration_us: 0,
        }],
        ..sample(4)
    };
    let appended = append(
        &*store,
        vec![sample(0), asked, sample(2), declined, sample(3)],
    )?;
    let got = ensure_answer(&*store, &appended, &AuditQuery::all())?;
    ensure!(
        got.iter()
            .map(|record| record.asks.len())
            .collect::<Vec<_>>()
            == [0, 1, 0, 2, 0],
        "the records read back with {:?} questions each, newest first; expected [0, 1, 0, 2, 0]",
        got.iter()
            .map(|record| record.asks.len())
            .collect::<Vec<_>>()
    );
    Ok(())
}

/// The record of a switch of tools (`registry.switch`, with what it switched) comes back as
/// appended between calls' records, and a query by its tool finds it alone.
pub fn switch_records_round_trip(make: &StoreFactory) -> Result<(), Failure> {
    let store = make();
    let switched = |action, selector: &str, changed: &[&str]| AuditRecord {
        tool: SWITCH_RECORD_TOOL.into(),
        domain: None,
        category: None,
        switch: Some(SwitchRecord {
            action,
            selector: selector.to_owned(),
            changed: changed.iter().map(|name| (*name).to_owned()).collect(),
        }),
        ..sample(7)
    };
    let appended = append(
        &*store,
        vec![
            sample(0),
            switched(SwitchAction::Disable, "tag:beta", &["a_tool", "b_tool"]),
            sample(1),
            switched(SwitchAction::Enable, "tool:a_tool", &[]),
        ],
    )?;
    let got = ensure_answer(&*store, &appended, &AuditQuery::all())?;
    ensure!(
        got.iter()
            .map(|record| record.switch.as_ref().map(|switch| switch.changed.len()))
            .collect::<Vec<_>>()
            == [Some(0), None, Some(2), None],
        "the records read back with switches {:?}, newest first; expected [Some(0), None, \
         Some(2), None] changed tools",
        got.iter()
            .map(|record| record.switch.as_ref().map(|switch| switch.changed.len()))
            .collect::<Vec<_>>()
    );
    ensure_answer(
        &*store,
        &appended,
        &AuditQuery::all().tool(SWITCH_RECORD_TOOL),
    )?;
    Ok(())
}

/// Every field comes back exactly as appended: absent optional fields, every outcome, category
/// and initiator, both digests, a 128-byte non-ASCII tool name, sub-microsecond timestamps,
/// extreme durations.
pub fn records_round_trip_unchanged(make: &StoreFactory) -> Result<(), Failure> {
    let store = make();
    let outcomes =
        std::iter::once(Outcome::Ok).chain(ErrorKind::ALL.iter().copied().map(Outcome::Error));
    let mut records: Vec<AuditRecord> = outcomes
        .enumerate()
        .map(|(n, outcome)| {
            let mut record = sample(n);
            record.outcome = outcome;
            record.category = Some(Category::ALL[n % Category::ALL.len()]);
            record
        })
        .collect();
    let long_name: String = "é".repeat(MAX_TOOL_NAME_BYTES / 2);
    records.push(AuditRecord {
        asks: Vec::new(),
        switch: None,
        node: None,
        id: 0,
        timestamp: Timestamp::constant(super::BASE_SECOND, 1),
        tool: long_name.into(),
        domain: None,
        category: None,
        org_id: None,
        user_id: None,
        session_id: None,
        correlation_id: None,
        initiator: Initiator::Agent,
        input_hash: Some(Digest([0; 32])),
        output_hash: Some(Digest([0xff; 32])),
        digest_error: None,
        action: None,
        duration_us: u64::MAX >> 1,
        outcome: Outcome::Error(ErrorKind::MissingContext),
    });
    records.push(AuditRecord {
        node: None,
        tool: "quote ' \" ; -- %_ \u{1F600}".into(),
        org_id: Some(OrgId::from("")),
        correlation_id: Some(CorrelationId::from("")),
        initiator: Initiator::Human,
        duration_us: 0,
        timestamp: at(-1_000_000),
        ..sample(7)
    });
    let appended = append(&*store, records)?;
    ensure_answer(&*store, &appended, &AuditQuery::all())?;
    for record in &appended {
        let before = AuditQuery {
            before_id: Some(record.id + 1),
            ..AuditQuery::all().limit(1)
        };
        ensure_answer(&*store, &appended, &before)?;
    }
    Ok(())
}

/// The queries the filter and tenant checks ask, over samples: each filter alone, in pairs and
/// triples, with limits, time ranges and cursors.
fn questions(appended: &[AuditRecord]) -> Vec<AuditQuery> {
    let middle_id = appended
        .get(appended.len() / 2)
        .map_or(1, |record| record.id);
    let mut questions = vec![
        AuditQuery::all(),
        AuditQuery::all().limit(1),
        AuditQuery::all().limit(10),
        AuditQuery::correlation("corr-5"),
        AuditQuery::correlation("corr-does-not-exist"),
        AuditQuery::all().org("nobody"),
        AuditQuery::all().between(at(500), at(900)),
        AuditQuery::all().between(at(500), at(500)),
        AuditQuery {
            since: Some(at(1_000)),
            ..AuditQuery::all()
        },
        AuditQuery {
            until: Some(at(300)),
            ..AuditQuery::all()
        },
        AuditQuery {
            since: Some(at(1_000) + jiff::SignedDuration::from_nanos(1)),
            ..AuditQuery::all()
        },
        AuditQuery {
            before_id: Some(middle_id),
            ..AuditQuery::all().limit(5)
        },
        AuditQuery {
            before_id: Some(0),
            ..AuditQuery::all()
        },
        AuditQuery {
            before_id: Some(AuditId::MAX),
            ..AuditQuery::all().limit(3)
        },
    ];
    for org in ORGS {
        questions.push(AuditQuery::all().org(org));
        questions.push(AuditQuery::all().org(org).tool(TOOLS[1]));
        questions.push(AuditQuery {
            user_id: Some(USERS[2].into()),
            outcome: Some(Outcome::Ok),
            ..AuditQuery::all().org(org)
        });
        questions.push(
            AuditQuery::all()
                .org(org)
                .between(at(200), at(1_500))
                .limit(4),
        );
        questions.push(AuditQuery {
            correlation_id: Some("corr-6".into()),
            ..AuditQuery::all().org(org)
        });
    }
    for tool in TOOLS {
        questions.push(AuditQuery::all().tool(tool));
        questions.push(AuditQuery {
            before_id: Some(middle_id),
            ..AuditQuery::all().tool(tool).limit(7)
        });
    }
    for user in USERS {
        questions.push(AuditQuery {
            user_id: Some(user.into()),
            ..AuditQuery::all()
        });
    }
    for outcome in [
        Outcome::Ok,
        Outcome::Error(ErrorKind::PermissionDenied),
        Outcome::Error(ErrorKind::Timeout),
        Outcome::Error(ErrorKind::MissingContext),
        Outcome::Error(ErrorKind::Cancelled),
    ] {
        questions.push(AuditQuery {
            outcome: Some(outcome),
            ..AuditQuery::all()
        });
    }
    questions
}

/// Each filter alone and combined returns exactly the matching records, newest first, at most
/// `limit`; `limit(0)` returns nothing.
pub fn queries_filter_by_every_field_newest_first(make: &StoreFactory) -> Result<(), Failure> {
    let store = make();
    let appended = seed(&*store, 240)?;
    for question in questions(&appended) {
        ensure_answer(&*store, &appended, &question)?;
    }
    let none = query(&*store, &AuditQuery::all().limit(0))?;
    ensure!(none.is_empty(), "limit(0) returned {} records", none.len());
    Ok(())
}

/// Following `before_id` cursors page by page visits every matching record exactly once, newest
/// first, for several page sizes and filters.
pub fn paging_with_before_id_covers_everything_once(make: &StoreFactory) -> Result<(), Failure> {
    let store = make();
    let appended = seed(&*store, 200)?;
    let filters = [
        AuditQuery::all(),
        AuditQuery::all().org("acme"),
        AuditQuery::all().tool(TOOLS[2]),
        AuditQuery {
            outcome: Some(Outcome::Ok),
            ..AuditQuery::all().org("globex")
        },
    ];
    for filter in filters {
        let want = ids(&expected(&appended, &filter));
        for page_size in [1, 7, 64, 1_000] {
            let mut seen: Vec<AuditId> = Vec::new();
            let mut cursor = None;
            for _page in 0..=appended.len() + 1 {
                let question = AuditQuery {
                    before_id: cursor,
                    limit: Some(page_size),
                    ..filter.clone()
                };
                let page = query(&*store, &question)?;
                ensure_newest_first(&page, &question)?;
                ensure!(
                    page.len() <= page_size,
                    "query {question:?} returned {} records, more than its limit",
                    page.len()
                );
                let Some(last) = page.last() else {
                    break;
                };
                cursor = Some(last.id);
                seen.extend(ids(&page));
            }
            ensure!(
                seen == want,
                "paging {filter:?} by {page_size} visited {seen:?}, expected each of {want:?} \
                 exactly once, newest first"
            );
        }
    }
    Ok(())
}

/// `delete_before` deletes only records timestamped strictly before the cutoff, oldest first,
/// at most `limit` per call, counts them in `stats().expired`, and leaves the rest queryable.
pub fn retention_deletes_oldest_first_within_the_limit(make: &StoreFactory) -> Result<(), Failure> {
    let store = make();
    let appended = append(
        &*store,
        (0..10)
            .map(|n| AuditRecord {
                node: None,
                timestamp: at(n as i64),
                ..sample(n)
            })
            .collect(),
    )?;
    let cutoff = at(5);
    let delete = |limit: usize| {
        store.delete_before(cutoff, limit).map_err(|error| {
            Failure::new(format!("delete_before({cutoff}, {limit}) failed: {error}"))
        })
    };
    let steps = [
        (3, 3, &appended[3..]),
        (0, 0, &appended[3..]),
        (100, 2, &appended[5..]),
    ];
    for (limit, want_deleted, want_left) in steps {
        let deleted = delete(limit)?;
        ensure!(
            deleted == want_deleted,
            "delete_before(cutoff, {limit}) deleted {deleted}, expected {want_deleted}"
        );
        ensure_answer(&*store, want_left, &AuditQuery::all())?;
    }
    let again = delete(100)?;
    ensure!(again == 0, "a second sweep deleted {again} more records");
    let stats = store.stats();
    ensure!(
        stats.expired == 5 && stats.held == 5 && stats.appended == 10 && stats.evicted == 0,
        "after expiring 5 of 10 records the stats say {stats:?}"
    );
    Ok(())
}

/// After retention deletes every record, new records still get ids above every id ever given:
/// a cursor or a reference kept by a reader never points at a different record.
pub fn ids_are_never_reused_after_retention(make: &StoreFactory) -> Result<(), Failure> {
    let store = make();
    let first = append(&*store, (0..5).map(sample).collect())?;
    let deleted = store
        .delete_before(at(1_000_000), 100)
        .map_err(|error| Failure::new(format!("delete_before failed: {error}")))?;
    ensure!(deleted == 5, "deleting every record deleted {deleted} of 5");
    let left = query(&*store, &AuditQuery::all())?;
    ensure!(
        left.is_empty(),
        "records left after deleting every one: {left:?}"
    );
    let newest_before = first.iter().map(|record| record.id).max().unwrap_or(0);
    let second = append(&*store, (5..8).map(sample).collect())?;
    ensure!(
        second.iter().all(|record| record.id > newest_before),
        "ids {:?} given after a sweep reuse ids up to {newest_before}",
        ids(&second)
    );
    Ok(())
}

const WRITERS: usize = 4;
const BATCHES_PER_WRITER: usize = 25;
const RECORDS_PER_BATCH: usize = 16;

/// A record of writer `writer`: its correlation id names the writer, its org alternates.
fn writer_record(writer: usize, n: usize) -> AuditRecord {
    AuditRecord {
        node: None,
        org_id: Some(ORGS[writer % 2].into()),
        correlation_id: Some(format!("writer-{writer}").into()),
        ..sample(n)
    }
}

/// Reads continuously while writers append; returns how many queries ran.
fn read_until_done(store: &dyn AuditStore, done: &AtomicBool) -> Result<usize, Failure> {
    let by_org = AuditQuery::all().org(ORGS[0]).limit(50);
    let by_writer = AuditQuery::correlation("writer-1").limit(50);
    let mut queries = 0;
    while !done.load(Ordering::Acquire) {
        for question in [&AuditQuery::all().limit(50), &by_org, &by_writer] {
            let got = query(store, question)?;
            ensure_newest_first(&got, question)?;
            ensure!(
                got.iter().all(|record| question.matches(record)),
                "query {question:?} during writes returned a record it does not match"
            );
            queries += 1;
        }
    }
    Ok(queries)
}

/// Several threads append batches while others query: readers never fail and always see
/// newest-first, matching results; afterwards every record is there once, and each writer's
/// records have increasing ids in the order it appended them.
pub fn concurrent_writers_and_readers_lose_nothing(make: &StoreFactory) -> Result<(), Failure> {
    let store = make();
    let done = AtomicBool::new(false);
    let outcome = thread::scope(|scope| {
        let readers: Vec<_> = (0..2)
            .map(|_| scope.spawn(|| read_until_done(&*store, &done)))
            .collect();
        let writers: Vec<_> = (0..WRITERS)
            .map(|writer| {
                let store = &*store;
                scope.spawn(move || -> Result<Vec<AuditId>, Failure> {
                    let mut written = Vec::new();
                    for batch in 0..BATCHES_PER_WRITER {
                        let first = batch * RECORDS_PER_BATCH;
                        let records = (first..first + RECORDS_PER_BATCH)
                            .map(|n| writer_record(writer, n))
                            .collect();
                        written.extend(ids(&append(store, records)?));
                    }
                    Ok(written)
                })
            })
            .collect();
        let written: Vec<_> = writers.into_iter().map(join).collect();
        done.store(true, Ordering::Release);
        let read: Vec<_> = readers.into_iter().map(join).collect();
        (written, read)
    });
    let (written, read) = outcome;
    for reader in read {
        reader?;
    }
    let mut every_id = BTreeSet::new();
    for (writer, ids_of_writer) in written.into_iter().enumerate() {
        let ids_of_writer = ids_of_writer?;
        ensure!(
            ids_of_writer.windows(2).all(|pair| pair[0] < pair[1]),
            "writer {writer}'s ids are not increasing in its append order"
        );
        let found = query(
            &*store,
            &AuditQuery::correlation(format!("writer-{writer}")),
        )?;
        let mut found_ids = ids(&found);
        found_ids.reverse();
        ensure!(
            found_ids == ids_of_writer,
            "writer {writer} appended {} records but the store has {} of them",
            ids_of_writer.len(),
            found_ids.len()
        );
        every_id.extend(ids_of_writer);
    }
    let total = WRITERS * BATCHES_PER_WRITER * RECORDS_PER_BATCH;
    ensure!(
        every_id.len() == total,
        "{} distinct ids for {total} records",
        every_id.len()
    );
    let all = query(&*store, &AuditQuery::all())?;
    ensure!(
        all.len() == total,
        "query(all) found {} of {total} records",
        all.len()
    );
    let stats = store.stats();
    ensure!(
        stats.appended == total as u64 && stats.held == total as u64,
        "after {total} concurrent appends the stats say {stats:?}"
    );
    Ok(())
}

/// Joins a scoped thread, turning its panic into a failure.
fn join<T>(handle: thread::ScopedJoinHandle<'_, Result<T, Failure>>) -> Result<T, Failure> {
    handle
        .join()
        .map_err(|_| Failure::new("a thread of the check panicked"))?
}

/// A query for org A never returns a record of org B, whatever else it filters on, even when
/// the two tenants' records are identical but for the org, and an org id is matched exactly
/// (no prefix, case or pattern matching).
pub fn tenant_scoping_never_leaks_another_org(make: &StoreFactory) -> Result<(), Failure> {
    let store = make();
    let mut records = Vec::new();
    for n in 0..60 {
        for org in [Some("acme"), Some("globex"), None, Some("acme-corp")] {
            records.push(AuditRecord {
                node: None,
                org_id: org.map(OrgId::from),
                ..sample(n)
            });
        }
    }
    let appended = append(&*store, records)?;
    let mut asked = 0;
    for org in ["acme", "globex"] {
        for question in questions(&appended) {
            let scoped = AuditQuery {
                org_id: Some(org.into()),
                ..question
            };
            let got = ensure_answer(&*store, &appended, &scoped)?;
            ensure!(
                got.iter()
                    .all(|record| record.org_id.as_ref().is_some_and(|id| id == org)),
                "query {scoped:?} returned another tenant's records"
            );
            asked += usize::from(!got.is_empty());
        }
    }
    ensure!(
        asked > 10,
        "the tenant check asked too few questions with answers ({asked})"
    );
    for stranger in ["ACME", "acm", "acme%", "acme_corp", "%", "acme' OR '1'='1"] {
        let got = query(&*store, &AuditQuery::all().org(stranger))?;
        ensure!(
            got.is_empty(),
            "org `{stranger}` matched {} records of other orgs (org ids match exactly)",
            got.len()
        );
    }
    Ok(())
}
