//! The writer connection and what only it does: append a batch, and delete expired records.
//!
//! A batch is one immediate transaction (it takes the write lock at `BEGIN`, so another
//! process writing the same file waits instead of failing mid-batch):
//!
//! 1. the batch's ids are taken from `audit_sequence` (one `UPDATE … RETURNING`), which only
//!    grows: ids are never reused, even after retention deleted every record (what
//!    `AUTOINCREMENT` promises, for one update per batch instead of one per record);
//! 2. each record is one row, its tool and org replaced by their dictionary keys;
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
}

impl Writer {
    pub(crate) fn new(connection: Connection) -> Self {
        Self {
            connection,
            dictionaries: Dictionaries::new(),
            postings: BatchPostings::default(),
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
        } = self;
        let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let count = records.len() as i64;
        let last_id: i64 = transaction
            .prepare_cached("UPDATE audit_sequence SET last_id = last_id + ?1 RETURNING last_id")?
            .query_row([count], |row| row.get(0))?;
        let first_id = last_id - count + 1;
        postings.clear();
        let mut min_ts = i64::MAX;
        let mut max_ts = i64::MIN;
        {
            let mut insert = transaction.prepare_cached(codec::INSERT)?;
            for (offset, record) in (0_u64..).zip(records) {
                let tool_key = dictionaries.tools.key(&transaction, &record.tool)?;
                let org_key = match &record.org_id {
                    Some(org_id) => Some(dictionaries.orgs.key(&transaction, org_id.as_str())?),
                    None => None,
                };
                let timestamp_ns = codec::timestamp_to_sql(record.timestamp);
                min_ts = min_ts.min(timestamp_ns);
                max_ts = max_ts.max(timestamp_ns);
                let row = codec::Row {
                    id: first_id + offset as i64,
                    timestamp_ns,
                    tool_key,
                    org_key,
                    record,
                };
                codec::insert(&mut insert, &row)?;
                postings.add(offset, tool_key, org_key, record.outcome);
            }
        }
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

    use super::*;
    use crate::test_support::{database, explain};

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
