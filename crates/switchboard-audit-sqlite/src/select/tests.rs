//! The plans' SQL, checked with `EXPLAIN QUERY PLAN` on a real (empty) database: each filter
//! reaches its records through an index or its postings, newest first, and nothing sorts.

use rusqlite::Connection;
use switchboard_audit::Outcome;
use switchboard_core::ErrorKind;

use super::*;
use crate::test_support::{database, explain};

/// Every key resolved, and a time range.
const RESOLVED: Resolved = Resolved {
    tool_key: Some(2),
    org_key: Some(3),
    lowest_id: Some(100),
    highest_id: Some(900),
};

/// The plan of `query` must be a records query whose plan contains `expected`.
fn ensure_records_plan(
    connection: &Connection,
    query: &AuditQuery,
    resolved: &Resolved,
    expected: &str,
) {
    let Plan::Records(select) = plan(query, resolved) else {
        panic!("{query:?} should read the records table directly");
    };
    let steps = explain(connection, &select.sql, &select.parameters);
    assert!(
        steps.contains(expected),
        "{query:?} should use {expected}: {steps}"
    );
    assert!(
        !steps.contains("TEMP B-TREE"),
        "{query:?} should not sort: {steps}"
    );
    assert!(
        !steps.contains("SCAN audit_") && !steps.contains("SCAN r"),
        "{query:?} should scan no whole table: {steps}"
    );
}

/// The plan of `query` must walk `table`'s primary key and read each record by id.
fn ensure_postings_plan(
    connection: &Connection,
    query: &AuditQuery,
    resolved: &Resolved,
    table: &str,
) {
    let Plan::Postings {
        postings, fetch, ..
    } = plan(query, resolved)
    else {
        panic!("{query:?} should walk postings");
    };
    let steps = explain(connection, &postings.sql, &postings.parameters);
    assert!(
        steps.starts_with(&format!("SEARCH {table} USING PRIMARY KEY (")),
        "{query:?} should walk {table} by key: {steps}"
    );
    assert!(
        !steps.contains("TEMP B-TREE"),
        "{query:?} should not sort: {steps}"
    );
    let mut parameters = vec![Value::Integer(1)];
    parameters.extend(fetch.parameters.iter().cloned());
    let steps = explain(connection, &fetch.sql, &parameters);
    assert!(
        steps.starts_with("SEARCH r USING INTEGER PRIMARY KEY (rowid=?)"),
        "{query:?} should read each record by id: {steps}"
    );
    assert!(
        !steps.contains("SCAN"),
        "{query:?} should scan nothing: {steps}"
    );
}

#[test]
fn a_correlation_id_is_found_through_its_index_newest_first() {
    let (_dir, connection) = database();
    let unresolved = Resolved::default();
    for (query, resolved) in [
        (AuditQuery::correlation("c").limit(50), unresolved),
        (
            AuditQuery {
                before_id: Some(1_000),
                user_id: Some("alice".into()),
                since: Some(jiff::Timestamp::UNIX_EPOCH),
                until: Some(jiff::Timestamp::MAX),
                ..AuditQuery::correlation("c").org("acme").tool("t").limit(50)
            },
            RESOLVED,
        ),
    ] {
        ensure_records_plan(
            &connection,
            &query,
            &resolved,
            "SEARCH r USING INDEX audit_records_by_correlation (correlation_id=?",
        );
    }
}

#[test]
fn org_tool_and_outcome_queries_walk_their_postings_newest_first() {
    let (_dir, connection) = database();
    let org = AuditQuery::all().org("acme").limit(50);
    let tool = AuditQuery::all().tool("t").limit(50);
    let outcome = AuditQuery {
        outcome: Some(Outcome::Error(ErrorKind::Timeout)),
        ..AuditQuery::all().limit(50)
    };
    let everything = AuditQuery {
        before_id: Some(1_000),
        user_id: Some("alice".into()),
        outcome: Some(Outcome::Ok),
        since: Some(jiff::Timestamp::UNIX_EPOCH),
        until: Some(jiff::Timestamp::MAX),
        ..AuditQuery::all().org("acme").tool("t").limit(50)
    };
    let resolved_org = Resolved {
        org_key: Some(3),
        ..Resolved::default()
    };
    let resolved_tool = Resolved {
        tool_key: Some(2),
        ..Resolved::default()
    };
    ensure_postings_plan(&connection, &org, &resolved_org, "audit_org_postings");
    ensure_postings_plan(&connection, &tool, &resolved_tool, "audit_tool_postings");
    ensure_postings_plan(
        &connection,
        &outcome,
        &Resolved::default(),
        "audit_outcome_postings",
    );
    ensure_postings_plan(&connection, &everything, &RESOLVED, "audit_org_postings");
    let tool_in_time = AuditQuery {
        since: Some(jiff::Timestamp::UNIX_EPOCH),
        until: Some(jiff::Timestamp::MAX),
        ..tool
    };
    let resolved_tool_in_time = Resolved {
        org_key: None,
        ..RESOLVED
    };
    ensure_postings_plan(
        &connection,
        &tool_in_time,
        &resolved_tool_in_time,
        "audit_tool_postings",
    );
}

#[test]
fn a_time_range_reads_only_the_ids_its_bounds_allow() {
    let (_dir, connection) = database();
    let window = AuditQuery::all()
        .between(jiff::Timestamp::UNIX_EPOCH, jiff::Timestamp::MAX)
        .limit(50);
    let resolved = Resolved {
        lowest_id: Some(100),
        highest_id: Some(900),
        ..Resolved::default()
    };
    ensure_records_plan(
        &connection,
        &window,
        &resolved,
        "SEARCH r USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)",
    );
    let since = AuditQuery {
        since: Some(jiff::Timestamp::UNIX_EPOCH),
        user_id: Some("alice".into()),
        ..AuditQuery::all().limit(50)
    };
    let resolved = Resolved {
        lowest_id: Some(100),
        ..Resolved::default()
    };
    ensure_records_plan(
        &connection,
        &since,
        &resolved,
        "SEARCH r USING INTEGER PRIMARY KEY (rowid>?)",
    );
}

#[test]
fn the_newest_records_are_read_in_id_order_without_sorting() {
    let (_dir, connection) = database();
    for query in [
        AuditQuery::all().limit(50),
        AuditQuery {
            user_id: Some("alice".into()),
            ..AuditQuery::all().limit(50)
        },
    ] {
        let Plan::Records(select) = plan(&query, &Resolved::default()) else {
            panic!("{query:?} should read the records table directly");
        };
        let steps = explain(&connection, &select.sql, &select.parameters);
        assert!(steps.starts_with("SCAN r"), "{query:?}: {steps}");
        assert!(
            !steps.contains("TEMP B-TREE"),
            "newest first is id order: {steps}"
        );
    }
    let Plan::Records(select) = plan(
        &AuditQuery {
            before_id: Some(10),
            ..AuditQuery::all().limit(50)
        },
        &Resolved::default(),
    ) else {
        panic!("a cursor alone reads the records table");
    };
    let steps = explain(&connection, &select.sql, &select.parameters);
    assert!(
        steps.starts_with("SEARCH r USING INTEGER PRIMARY KEY (rowid<?)"),
        "{steps}"
    );
}

#[test]
fn only_the_filters_that_are_set_become_conditions() {
    let Plan::Records(all) = plan(&AuditQuery::all(), &Resolved::default()) else {
        panic!("all() reads the records table");
    };
    assert!(
        all.sql.ends_with("FROM audit_records r ORDER BY r.id DESC"),
        "{}",
        all.sql
    );
    assert!(all.parameters.is_empty());

    let query = AuditQuery {
        correlation_id: Some("c' OR '1'='1".into()),
        outcome: Some(Outcome::Error(ErrorKind::Timeout)),
        before_id: Some(42),
        ..AuditQuery::all().org("acme' OR '1'='1").limit(5)
    };
    let resolved = Resolved {
        org_key: Some(7),
        ..Resolved::default()
    };
    let Plan::Records(scoped) = plan(&query, &resolved) else {
        panic!("a correlation id reads the records table through its index");
    };
    assert!(
        scoped.sql.ends_with(
            "WHERE r.correlation_id = ? AND r.org_key = ? AND r.outcome = ? AND r.id < ? \
             ORDER BY r.id DESC LIMIT ?"
        ),
        "{}",
        scoped.sql
    );
    assert_eq!(
        scoped.parameters,
        [
            Value::Text("c' OR '1'='1".to_owned()),
            Value::Integer(7),
            Value::Text("timeout".to_owned()),
            Value::Integer(42),
            Value::Integer(5),
        ]
    );
}

#[test]
fn a_postings_plan_filters_every_record_it_reads_on_every_filter() {
    let query = AuditQuery {
        user_id: Some("alice".into()),
        before_id: Some(42),
        ..AuditQuery::all().org("acme").tool("t").limit(5)
    };
    let resolved = Resolved {
        org_key: Some(7),
        tool_key: Some(8),
        ..Resolved::default()
    };
    let Plan::Postings {
        postings,
        fetch,
        before_id,
        highest_id,
        limit,
    } = plan(&query, &resolved)
    else {
        panic!("an org query walks the org's postings");
    };
    assert_eq!(
        postings.sql,
        "SELECT first_id, offsets FROM audit_org_postings WHERE org_key = ? AND first_id < ? \
         ORDER BY first_id DESC"
    );
    assert_eq!(postings.parameters, [Value::Integer(7), Value::Integer(42)]);
    assert!(
        fetch.sql.ends_with(
            "WHERE r.id = ? AND r.org_key = ? AND r.tool_key = ? AND r.user_id = ? AND r.id < ?"
        ),
        "the org is checked on the record too, not only through its postings: {}",
        fetch.sql
    );
    assert_eq!(
        fetch.parameters,
        [
            Value::Integer(7),
            Value::Integer(8),
            Value::Text("alice".to_owned()),
            Value::Integer(42),
        ]
    );
    assert_eq!((before_id, highest_id, limit), (Some(42), None, Some(5)));
}
