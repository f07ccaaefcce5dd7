//! The writer connection and what only it does: append a batch, and delete expired records.
//!
//! A batch is one immediate transaction (it takes the write lock at `BEGIN`, so another
//! process writing the same file waits instead of failing mid-batch) running one prepared
//! insert per record. Either every record commits or none does.

use rusqlite::{Connection, TransactionBehavior};
use switchboard_audit::AuditRecord;

use crate::codec;

/// Whether any record is timestamped before `?1` (the time index answers it at once).
const ANY_EXPIRED: &str = "SELECT EXISTS (SELECT 1 FROM audit_records WHERE timestamp_ns < ?1)";

/// The expired records (`timestamp_ns < ?1`), lowest ids first, at most `?2` of them. SQLite
/// walks the table from its lowest id and stops at the limit.
const DELETE_EXPIRED: &str = "DELETE FROM audit_records WHERE id IN (SELECT id FROM audit_records \
     WHERE timestamp_ns < ?1 ORDER BY id LIMIT ?2)";

/// Appends `records` in one transaction and returns the id SQLite gave each, in order.
pub(crate) fn append(
    connection: &mut Connection,
    records: &[AuditRecord],
) -> rusqlite::Result<Vec<i64>> {
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut ids = Vec::with_capacity(records.len());
    {
        let mut insert = transaction.prepare_cached(codec::INSERT)?;
        for record in records {
            codec::bind(&mut insert, record)?;
            insert.raw_execute()?;
            ids.push(transaction.last_insert_rowid());
        }
    }
    transaction.commit()?;
    Ok(ids)
}

/// Deletes at most `limit` records timestamped before `cutoff_ns`, lowest ids (the oldest
/// appended) first, in one short transaction, and returns how many it deleted.
pub(crate) fn delete_before(
    connection: &mut Connection,
    cutoff_ns: i64,
    limit: i64,
) -> rusqlite::Result<u64> {
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let any_expired: bool = transaction
        .prepare_cached(ANY_EXPIRED)?
        .query_row([cutoff_ns], |row| row.get(0))?;
    if !any_expired {
        return Ok(0);
    }
    let deleted = transaction
        .prepare_cached(DELETE_EXPIRED)?
        .execute((cutoff_ns, limit))?;
    transaction.commit()?;
    Ok(deleted as u64)
}
