//! The writer connection and what only it does: append a batch, and delete expired records.
//!
//! A batch is one immediate transaction (it takes the write lock at `BEGIN`, so another
//! process writing the same file waits instead of failing mid-batch):
//!
//! 1. the batch's ids are taken from `audit_sequence` (one `UPDATE … RETURNING`), which only
//!    grows: ids are never reused, even after retention deleted every record (what
//!    `AUTOINCREMENT` promises, for one update per batch instead of one per record);
//! 2. each record is one row, its tool and org replaced by their dictionary keys: the first with
//!    its id, the others [`codec::ROWS_PER_INSERT`] rows per statement (the last few one by
//!    one) taking the next ids from SQLite, checked before the commit (`codec` says why);
//! 3. then, once per batch: the postings and the time bounds.
//!
//! Either all of it commits or none of it does; `append` returns the first id once committed.

use rusqlite::{Connection, TransactionBehavior};
use switchboard_audit::AuditRecord;

use crate::{
    codec,
    dictionary::Dictionaries,
    postings::{self, BatchPostings},
    time_bounds,
};

/// The expired records below an id (`?1`), lowest ids first, at most `?3` of them.
const DELETE_EXPIRED: &str = "DELETE FROM audit_records WHERE id IN (SELECT id FROM audit_records \
     WHERE id <= ?1 AND timestamp_ns < ?2 ORDER BY id LIMIT ?3)";

/// The writer connection, with the dictionary keys and the buffers it reuses.
#[derive(Debug)]
pub(crate) struct Writer {
    connection: Connection,
    dictionaries: Dictionaries,
    postings: BatchPostings,
    /// The insert of a batch's first row; of [`codec::ROWS_PER_INSERT`] rows after it; of one.
    insert_first: String,
    insert_many: String,
    insert_one: String,
}

impl Writer {
    pub(crate) fn new(connection: Connection) -> Self {
        Self {
            connection,
            dictionaries: Dictionaries::new(),
            postings: BatchPostings::default(),
            insert_first: codec::insert_first_sql(),
            insert_many: codec::insert_next_sql(codec::ROWS_PER_INSERT),
            insert_one: codec::insert_next_sql(1),
        }
    }

    /// Appends `records` (at least one) in one transaction and returns the id of the first;
    /// the others follow it one by one.
    pub(crate) fn append(&mut self, records: &[AuditRecord]) -> rusqlite::Result<i64> {
        let appended = self.append_in_transaction(records);
        if appended.is_err() {
            // The transaction rolled back, with any key it added to a dictionary.
            self.dictionaries.forget();
        }
        appended
    }

    fn append_in_transaction(&mut self, records: &[AuditRecord]) -> rusqlite::Result<i64> {
        let Writer {
            connection,
            dictionaries,
            postings,
            insert_first,
            insert_many,
            insert_one,
        } = self;
        let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let count = records.len() as i64;
        let last_id: i64 = transaction
            .prepare_cached("UPDATE audit_sequence SET last_id = last_id + ?1 RETURNING last_id")?
            .query_row([count], |row| row.get(0))?;
        let first_id = last_id - count + 1;
        postings.clear();
        let mut rows = Rows {
            connection: &transaction,
            dictionaries,
            postings,
            first_id,
            next_offset: 0,
            min_ts: i64::MAX,
            max_ts: i64::MIN,
        };
        let Some((first, rest)) = records.split_first() else {
            return Ok(first_id);
        };
        {
            let mut insert = transaction.prepare_cached(insert_first)?;
            codec::bind_first(&mut insert, &rows.next_row(first)?)?;
            insert.raw_execute()?;
        }
        let chunks = rest.chunks_exact(codec::ROWS_PER_INSERT);
        let remainder = chunks.remainder();
        if rest.len() >= codec::ROWS_PER_INSERT {
            let mut insert = transaction.prepare_cached(insert_many)?;
            for chunk in chunks {
                for (position, record) in chunk.iter().enumerate() {
                    codec::bind_next(&mut insert, position, &rows.next_row(record)?)?;
                }
                insert.raw_execute()?;
            }
        }
        if !remainder.is_empty() {
            let mut insert = transaction.prepare_cached(insert_one)?;
            for record in remainder {
                codec::bind_next(&mut insert, 0, &rows.next_row(record)?)?;
                insert.raw_execute()?;
            }
        }
        // The rows after the first took the table's largest id plus one, each: they hold the
        // batch's ids only if the first row's id was the largest, which the sequence promises.
        // A file that breaks the promise fails the batch instead of shifting its ids.
        let last_given = transaction.last_insert_rowid();
        if last_given != last_id {
            return Err(ids_out_of_sequence(first_id, last_id, last_given));
        }
        let (min_ts, max_ts) = (rows.min_ts, rows.max_ts);
        postings.write(&transaction, first_id)?;
        time_bounds::record_batch(&transaction, first_id, last_id, min_ts, max_ts)?;
        transaction.commit()?;
        Ok(first_id)
    }

    /// Deletes at most `limit` records timestamped before `cutoff_ns`, lowest ids (the oldest
    /// appended) first, in one short transaction, and returns how many it deleted.
    pub(crate) fn delete_before(&mut self, cutoff_ns: i64, limit: i64) -> rusqlite::Result<u64> {
        let transaction = self
            .connection
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        // No record before the cutoff can sit above this id (see `time_bounds`).
        let Some(highest) = time_bounds::highest_id_before(&transaction, cutoff_ns)? else {
            return Ok(0);
        };
        let deleted = transaction
            .prepare_cached(DELETE_EXPIRED)?
            .execute((highest, cutoff_ns, limit))?;
        if deleted > 0 {
            prune(&transaction)?;
        }
        transaction.commit()?;
        Ok(deleted as u64)
    }
}

/// What a batch works out for each of its records, in order: its row (id, timestamp, keys),
/// its postings, and the batch's time bounds.
struct Rows<'batch> {
    connection: &'batch Connection,
    dictionaries: &'batch mut Dictionaries,
    postings: &'batch mut BatchPostings,
    first_id: i64,
    next_offset: u64,
    min_ts: i64,
    max_ts: i64,
}

impl Rows<'_> {
    /// The row of the batch's next record.
    fn next_row<'record>(
        &mut self,
        record: &'record AuditRecord,
    ) -> rusqlite::Result<codec::Row<'record>> {
        let tool_key = self.dictionaries.tools.key(self.connection, &record.tool)?;
        let org_key = match &record.org_id {
            Some(org_id) => Some(
                self.dictionaries
                    .orgs
                    .key(self.connection, org_id.as_str())?,
            ),
            None => None,
        };
        let timestamp_ns = codec::timestamp_to_sql(record.timestamp);
        self.min_ts = self.min_ts.min(timestamp_ns);
        self.max_ts = self.max_ts.max(timestamp_ns);
        let offset = self.next_offset;
        self.next_offset += 1;
        self.postings.add(offset, tool_key, org_key, record.outcome);
        Ok(codec::Row {
            id: self.first_id + offset as i64,
            timestamp_ns,
            tool_key,
            org_key,
            record,
        })
    }
}

/// The error of a batch whose rows did not get the ids the sequence gave it.
fn ids_out_of_sequence(first_id: i64, last_id: i64, last_given: i64) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT),
        Some(format!(
            "the batch was given ids {first_id}..={last_id} by audit_sequence, but its last row \
             got id {last_given}: audit_records holds an id above the sequence's last_id \
             (written by something other than this store?)"
        )),
    )
}

/// Deletes the postings and time bounds of batches with no record left.
fn prune(connection: &Connection) -> rusqlite::Result<()> {
    let oldest: Option<i64> = connection
        .prepare_cached("SELECT min(id) FROM audit_records")?
        .query_row([], |row| row.get(0))?;
    let (oldest, first_of_its_batch) = match oldest {
        Some(oldest) => (
            oldest,
            postings::batch_of(connection, oldest)?.unwrap_or(oldest),
        ),
        None => (i64::MAX, i64::MAX),
    };
    postings::prune(connection, first_of_its_batch)?;
    time_bounds::prune(connection, oldest)
}

#[cfg(test)]
mod tests {
    use rusqlite::types::Value;
    use switchboard_audit::{AuditQuery, AuditStore, Digest, Outcome};
    use switchboard_core::{ErrorKind, Initiator, OrgId};

    use super::*;
    use crate::test_support::{database, explain};

    fn record(n: u64) -> AuditRecord {
        AuditRecord {
            id: 0,
            timestamp: jiff::Timestamp::from_second(1_700_000_000 + n as i64).expect("in range"),
            tool: format!("tool_{}", n % 3).into(),
            domain: n.is_multiple_of(2).then(|| "roster".into()),
            category: None,
            org_id: (!n.is_multiple_of(5)).then(|| OrgId::from(format!("org-{}", n % 4))),
            user_id: Some(format!("user-{n}").into()),
            session_id: None,
            correlation_id: Some(format!("correlation-{n}").into()),
            initiator: Initiator::Human,
            input_hash: Some(Digest([n as u8; 32])),
            output_hash: (!n.is_multiple_of(7)).then_some(Digest([1; 32])),
            digest_error: None,
            duration_us: n,
            outcome: if n.is_multiple_of(6) {
                Outcome::Error(ErrorKind::PermissionDenied)
            } else {
                Outcome::Ok
            },
            action: None,
        }
    }

    #[test]
    fn a_row_above_the_sequence_fails_the_batch_instead_of_shifting_its_ids() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("audit.db");
        let store = crate::SqliteAuditStore::open(&path).expect("opens");
        let mut batch: Vec<AuditRecord> = (0..3).map(record).collect();
        store.append_batch(&mut batch).expect("appends");
        // Something other than the store writes id 10 without moving the sequence (at 3).
        let other = Connection::open(&path).expect("plain SQLite opens it");
        other
            .execute(
                "INSERT INTO audit_records (id, timestamp_ns, tool_key, initiator, input_hash, \
                 duration_us, outcome) VALUES (10, 0, 1, 'human', zeroblob(32), 0, 'ok')",
                [],
            )
            .expect("inserts");
        let mut batch: Vec<AuditRecord> = (3..5).map(record).collect();
        let error = store
            .append_batch(&mut batch)
            .expect_err("ids 4..=5 cannot be kept");
        assert!(error.to_string().contains("above the sequence"), "{error}");
        assert!(batch.iter().all(|record| record.id == 0));
        let ids: Vec<i64> = other
            .prepare("SELECT id FROM audit_records ORDER BY id")
            .expect("prepares")
            .query_map([], |row| row.get(0))
            .expect("reads")
            .collect::<Result<_, _>>()
            .expect("reads");
        assert_eq!(ids, [1, 2, 3, 10], "the failed batch left nothing behind");
    }

    #[test]
    fn batches_around_the_rows_per_insert_read_back_whole_and_in_order() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store = crate::SqliteAuditStore::open(dir.path().join("audit.db")).expect("opens");
        let sizes = [1, codec::ROWS_PER_INSERT - 1, codec::ROWS_PER_INSERT];
        let sizes = sizes
            .into_iter()
            .chain([codec::ROWS_PER_INSERT + 1, 3 * 8 + 5, 64]);
        let mut appended = Vec::new();
        let mut n = 0;
        for size in sizes {
            let mut batch: Vec<AuditRecord> = (n..n + size as u64).map(record).collect();
            n += size as u64;
            store.append_batch(&mut batch).expect("appends");
            appended.extend(batch);
        }
        let ids: Vec<u64> = appended.iter().map(|record| record.id).collect();
        assert_eq!(ids, (1..=n).collect::<Vec<_>>());
        let mut read = store.query(&AuditQuery::all()).expect("queries");
        read.reverse();
        assert_eq!(read, appended);
        for org in ["org-1", "org-3"] {
            let mut expected: Vec<AuditRecord> = appended
                .iter()
                .filter(|record| record.org_id.as_ref().map(OrgId::as_str) == Some(org))
                .cloned()
                .collect();
            expected.reverse();
            assert_eq!(
                store.query(&AuditQuery::all().org(org)).expect("queries"),
                expected
            );
        }
    }

    #[test]
    fn retention_reads_the_oldest_ids_first_without_sorting() {
        let (_dir, connection) = database();
        let parameters = [Value::Integer(1), Value::Integer(2), Value::Integer(3)];
        let steps = explain(&connection, DELETE_EXPIRED, &parameters);
        assert!(
            steps.contains("SEARCH audit_records USING INTEGER PRIMARY KEY (rowid<?)"),
            "{steps}"
        );
        assert!(!steps.contains("TEMP B-TREE"), "{steps}");
    }
}
