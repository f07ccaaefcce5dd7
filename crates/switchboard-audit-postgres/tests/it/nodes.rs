//! Two stores on one database, as two nodes of a fleet: each sees the other's records, ids
//! never collide and grow across both, retention on one node removes records for both, and two
//! nodes appending at the same time lose nothing.

use std::collections::BTreeSet;

use jiff::{SignedDuration, Timestamp};
use switchboard_audit::{AuditQuery, AuditStore};
use switchboard_audit_postgres::PostgresAuditStore;

use crate::common::{fresh_database, record};

#[test]
fn two_nodes_on_one_database_see_each_others_records() {
    let database = fresh_database();
    let node_a = PostgresAuditStore::open(database.url()).expect("node a opens");
    let node_b = PostgresAuditStore::open(database.url()).expect("node b opens");
    let mut from_a = vec![record("from-a"), record("from-a")];
    node_a.append_batch(&mut from_a).expect("a appends");
    let mut from_b = vec![record("from-b")];
    node_b.append_batch(&mut from_b).expect("b appends");
    assert!(
        from_a.iter().all(|a| a.id < from_b[0].id),
        "ids grow across nodes"
    );
    for node in [&node_a, &node_b] {
        let all = node.query(&AuditQuery::all()).expect("query");
        let ids: Vec<u64> = all.iter().map(|found| found.id).collect();
        assert_eq!(ids, [from_b[0].id, from_a[1].id, from_a[0].id]);
        assert_eq!(
            all[0], from_b[0],
            "a record reads back unchanged on either node"
        );
        assert_eq!(
            node.query(&AuditQuery::correlation("from-a"))
                .expect("query")
                .len(),
            2
        );
    }
    // Retention on node b removes node a's old records too.
    let mut old = record("old");
    old.timestamp = Timestamp::now() - SignedDuration::from_hours(48);
    let mut old = vec![old];
    node_a
        .append_batch(&mut old)
        .expect("a appends an old record");
    let cutoff = Timestamp::now() - SignedDuration::from_hours(24);
    assert_eq!(node_b.delete_before(cutoff, 10).expect("b sweeps"), 1);
    assert!(
        node_a
            .query(&AuditQuery::correlation("old"))
            .expect("query")
            .is_empty()
    );
    assert_eq!(node_b.stats().expired, 1);
    assert_eq!(node_a.stats().appended, 3);
}

#[test]
fn two_nodes_appending_at_once_lose_nothing_and_share_no_id() {
    const BATCHES: usize = 20;
    const RECORDS: usize = 50;
    let database = fresh_database();
    let nodes = [
        PostgresAuditStore::open(database.url()).expect("node a opens"),
        PostgresAuditStore::open(database.url()).expect("node b opens"),
    ];
    let written: Vec<Vec<u64>> = std::thread::scope(|scope| {
        let writers: Vec<_> = nodes
            .iter()
            .enumerate()
            .map(|(n, node)| {
                scope.spawn(move || {
                    let mut ids = Vec::new();
                    for batch in 0..BATCHES {
                        let mut records: Vec<_> = (0..RECORDS)
                            .map(|_| record(&format!("node-{n}-batch-{batch}")))
                            .collect();
                        node.append_batch(&mut records).expect("appends");
                        ids.extend(records.iter().map(|appended| appended.id));
                    }
                    ids
                })
            })
            .collect();
        writers
            .into_iter()
            .map(|writer| writer.join().expect("a writer"))
            .collect()
    });
    let mut every_id = BTreeSet::new();
    for ids in &written {
        assert!(
            ids.windows(2).all(|pair| pair[0] < pair[1]),
            "each node's ids grow in its append order"
        );
        every_id.extend(ids.iter().copied());
    }
    assert_eq!(every_id.len(), 2 * BATCHES * RECORDS, "no id given twice");
    for node in &nodes {
        let all = node.query(&AuditQuery::all()).expect("query");
        let found: BTreeSet<u64> = all.iter().map(|found| found.id).collect();
        assert_eq!(found, every_id, "each node sees every record once");
    }
}
