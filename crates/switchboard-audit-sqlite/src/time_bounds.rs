//! Time ranges without a time index: from a timestamp to the range of ids that can hold it.
//!
//! Records are appended in batches, and ids grow with each batch, but timestamps do not quite:
//! a record's timestamp is when its call started, and calls end (and are appended) in another
//! order. So there is no exact map from time to ids, but there is a cheap, correct bound, kept
//! per batch in two small tables:
//!
//! - `audit_time_highs (first_id, max_ts)`: the batches whose newest timestamp is above every
//!   earlier batch's. Every record at or after `since` is in a batch whose newest timestamp is
//!   at or after `since`; the first such batch is always one of these (every batch before it
//!   is older), and it is the one with the smallest `max_ts >= since`. So `id >= its first_id`
//!   holds for every record at or after `since`.
//! - `audit_time_lows (last_id, min_ts)`: the batches whose oldest timestamp is below every
//!   later batch's. Every record before `until` is in a batch whose oldest timestamp is before
//!   `until`; the last such batch is always one of these (every batch after it is newer), and
//!   it is the one with the largest `min_ts < until`. So `id <= its last_id` holds for every
//!   record before `until`.
//!
//! Both are kept as a batch is appended, in its transaction: a high is added when the batch's
//! newest timestamp beats the last high; for the lows, the lows at or above the batch's oldest
//! timestamp stop being lows and are deleted, and the batch is added. Each batch is added and
//! deleted at most once, so this costs a few B-tree operations per batch, not per record. A
//! query then filters on `timestamp_ns` exactly, within those ids: the bound only decides how
//! many rows it reads, never which records it returns.
//!
//! Retention deletes records oldest first; [`prune`] then drops the bounds of batches with no
//! record left (keeping the last high at or below the oldest record, which still bounds it).

use rusqlite::{Connection, OptionalExtension};

/// A new high when no earlier batch reached the batch's newest timestamp (`?2`).
const ADD_HIGH: &str = "INSERT INTO audit_time_highs (first_id, max_ts) SELECT ?1, ?2 \
     WHERE NOT EXISTS (SELECT 1 FROM audit_time_highs WHERE max_ts >= ?2)";
const DROP_LOWS_AT_OR_ABOVE: &str = "DELETE FROM audit_time_lows WHERE min_ts >= ?1";
const ADD_LOW: &str = "INSERT INTO audit_time_lows (last_id, min_ts) VALUES (?1, ?2)";
const LOWEST_ID_SINCE: &str =
    "SELECT first_id FROM audit_time_highs WHERE max_ts >= ?1 ORDER BY max_ts LIMIT 1";
const HIGHEST_ID_BEFORE: &str =
    "SELECT last_id FROM audit_time_lows WHERE min_ts < ?1 ORDER BY min_ts DESC LIMIT 1";
const PRUNE_LOWS: &str = "DELETE FROM audit_time_lows WHERE last_id < ?1";
const PRUNE_HIGHS: &str = "DELETE FROM audit_time_highs WHERE first_id < \
     (SELECT max(first_id) FROM audit_time_highs WHERE first_id <= ?1)";

/// Notes an appended batch: ids `first_id..=last_id`, timestamps `min_ts..=max_ts`.
pub(crate) fn record_batch(
    connection: &Connection,
    first_id: i64,
    last_id: i64,
    min_ts: i64,
    max_ts: i64,
) -> rusqlite::Result<()> {
    connection
        .prepare_cached(ADD_HIGH)?
        .execute((first_id, max_ts))?;
    connection
        .prepare_cached(DROP_LOWS_AT_OR_ABOVE)?
        .execute([min_ts])?;
    connection
        .prepare_cached(ADD_LOW)?
        .execute((last_id, min_ts))?;
    Ok(())
}

/// The lowest id a record timestamped at or after `since_ns` can have; `None` when no record
/// can be that recent.
pub(crate) fn lowest_id_since(
    connection: &Connection,
    since_ns: i64,
) -> rusqlite::Result<Option<i64>> {
    connection
        .prepare_cached(LOWEST_ID_SINCE)?
        .query_row([since_ns], |row| row.get(0))
        .optional()
}

/// The highest id a record timestamped before `until_ns` can have; `None` when no record can
/// be that old.
pub(crate) fn highest_id_before(
    connection: &Connection,
    until_ns: i64,
) -> rusqlite::Result<Option<i64>> {
    connection
        .prepare_cached(HIGHEST_ID_BEFORE)?
        .query_row([until_ns], |row| row.get(0))
        .optional()
}

/// Drops the bounds no record needs any more: `oldest_id` is the lowest id still held (or
/// `i64::MAX` when none is).
pub(crate) fn prune(connection: &Connection, oldest_id: i64) -> rusqlite::Result<()> {
    // A low whose batch ends below the oldest record bounds nothing that is left.
    connection
        .prepare_cached(PRUNE_LOWS)?
        .execute([oldest_id])?;
    // The last high starting at or below the oldest record still bounds it (and the records
    // after it, up to the next high); the ones before it bound nothing left.
    connection
        .prepare_cached(PRUNE_HIGHS)?
        .execute([oldest_id])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use rusqlite::types::Value;

    use super::*;
    use crate::test_support::{database, explain};

    #[test]
    fn every_statement_seeks_an_index_and_scans_nothing() {
        let (_dir, connection) = database();
        for (sql, expected) in [
            (ADD_HIGH, "INDEX audit_time_highs_by_time (max_ts>?)"),
            (
                DROP_LOWS_AT_OR_ABOVE,
                "INDEX audit_time_lows_by_time (min_ts>?)",
            ),
            (LOWEST_ID_SINCE, "INDEX audit_time_highs_by_time (max_ts>?)"),
            (
                HIGHEST_ID_BEFORE,
                "INDEX audit_time_lows_by_time (min_ts<?)",
            ),
            (PRUNE_LOWS, "INTEGER PRIMARY KEY (rowid<?)"),
            (PRUNE_HIGHS, "INTEGER PRIMARY KEY (rowid<?)"),
        ] {
            let steps = explain(&connection, sql, &[Value::Integer(1), Value::Integer(2)]);
            assert!(steps.contains(expected), "{sql}: {steps}");
            // `SCAN CONSTANT ROW` is the `SELECT ?1, ?2` of the insert, not a table.
            assert!(!steps.contains("SCAN audit_"), "{sql}: {steps}");
            assert!(!steps.contains("TEMP B-TREE"), "{sql}: {steps}");
        }
    }
}
