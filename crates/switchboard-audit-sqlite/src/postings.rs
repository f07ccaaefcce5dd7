//! Postings: for each org, tool and outcome in a batch, which of the batch's records have it.
//!
//! A posting is one row of `audit_org_postings` (or `_tool_`, `_outcome_`): the key, the
//! batch's first id, and the offsets from that id of the batch's records with that key, as a
//! JSON array, largest first (`[4090,17,3]`: ids `first_id + 4090`, `+ 17`, `+ 3`). Each
//! table's primary key is `(key, first_id)`, so one key's postings sit together, newest batch
//! last: a query walks them backwards and reads the records they list, newest first, exactly
//! as it would walk a per-record index, and reads no record of another key.
//!
//! The point is the cost on the write side: a per-record index takes one B-tree insert per
//! record and per index, a posting one per batch and per distinct key. A batch of 4,096
//! records from 50 orgs and 10 tools writes 50 + 10 posting rows instead of 8,192 index
//! entries. (A batch of one record writes one posting per table, as an index would.)
//!
//! Retention deletes records oldest first; the postings of batches left without records are
//! deleted with them ([`prune`]), through each table's `first_id` index.

use std::{collections::HashMap, hash::Hash};

use foldhash::fast::RandomState;
use rusqlite::{
    Connection, ToSql,
    types::{ToSqlOutput, Type, ValueRef},
};
use switchboard_audit::Outcome;

const PRUNE: [&str; 3] = [
    "DELETE FROM audit_org_postings WHERE first_id < ?1",
    "DELETE FROM audit_tool_postings WHERE first_id < ?1",
    "DELETE FROM audit_outcome_postings WHERE first_id < ?1",
];
const BATCH_OF: &str = "SELECT max(first_id) FROM audit_tool_postings WHERE first_id <= ?1";

/// The offsets of one batch's records, by key, for the three postings tables.
#[derive(Debug, Default)]
pub(crate) struct BatchPostings {
    orgs: Groups<i64>,
    tools: Groups<i64>,
    outcomes: Groups<Outcome>,
    /// The JSON text of the posting being written, reused (ASCII bytes, bound as text).
    offsets: Vec<u8>,
}

impl BatchPostings {
    /// Starts a new batch.
    pub(crate) fn clear(&mut self) {
        self.orgs.clear();
        self.tools.clear();
        self.outcomes.clear();
    }

    /// Notes the record at `offset` in the batch.
    pub(crate) fn add(
        &mut self,
        offset: u64,
        tool_key: i64,
        org_key: Option<i64>,
        outcome: Outcome,
    ) {
        self.tools.add(tool_key, offset);
        if let Some(org_key) = org_key {
            self.orgs.add(org_key, offset);
        }
        self.outcomes.add(outcome, offset);
    }

    /// Writes the batch's postings; `first_id` is the id of its first record.
    pub(crate) fn write(&mut self, connection: &Connection, first_id: i64) -> rusqlite::Result<()> {
        self.orgs.write(
            connection,
            "INSERT INTO audit_org_postings (org_key, first_id, offsets) VALUES (?1, ?2, ?3)",
            |key| key,
            first_id,
            &mut self.offsets,
        )?;
        self.tools.write(
            connection,
            "INSERT INTO audit_tool_postings (tool_key, first_id, offsets) VALUES (?1, ?2, ?3)",
            |key| key,
            first_id,
            &mut self.offsets,
        )?;
        self.outcomes.write(
            connection,
            "INSERT INTO audit_outcome_postings (outcome, first_id, offsets) \
             VALUES (?1, ?2, ?3)",
            Outcome::as_str,
            first_id,
            &mut self.offsets,
        )
    }
}

/// One table's offsets in a batch, grouped by key as the records arrive: a hash lookup per
/// record instead of sorting the whole batch, and the lists are kept from batch to batch.
#[derive(Debug)]
struct Groups<K> {
    /// Where each key met in this batch has its list in `lists`.
    slots: HashMap<K, usize, RandomState>,
    /// The lists, the first `slots.len()` of them this batch's (offsets in increasing order);
    /// the others are spare, kept for their allocations.
    lists: Vec<(K, Vec<u64>)>,
}

impl<K> Default for Groups<K> {
    fn default() -> Self {
        Self {
            slots: HashMap::default(),
            lists: Vec::new(),
        }
    }
}

impl<K: Copy + Eq + Hash> Groups<K> {
    fn clear(&mut self) {
        for (_, offsets) in &mut self.lists[..self.slots.len()] {
            offsets.clear();
        }
        self.slots.clear();
    }

    fn add(&mut self, key: K, offset: u64) {
        let next = self.slots.len();
        let slot = *self.slots.entry(key).or_insert(next);
        if slot == self.lists.len() {
            self.lists.push((key, Vec::new()));
        } else if slot == next {
            self.lists[slot].0 = key;
        }
        self.lists[slot].1.push(offset);
    }

    /// Writes one posting per key with `sql`, the key bound as `column(key)`, keys in order
    /// and each posting's offsets largest first.
    fn write<V: Ord + ToSql>(
        &mut self,
        connection: &Connection,
        sql: &str,
        column: impl Fn(K) -> V,
        first_id: i64,
        text: &mut Vec<u8>,
    ) -> rusqlite::Result<()> {
        let groups = &mut self.lists[..self.slots.len()];
        groups.sort_unstable_by_key(|(key, _)| column(*key));
        let mut insert = connection.prepare_cached(sql)?;
        for (key, offsets) in groups.iter() {
            text.clear();
            text.push(b'[');
            for (n, &offset) in offsets.iter().rev().enumerate() {
                if n > 0 {
                    text.push(b',');
                }
                push_decimal(text, offset);
            }
            text.push(b']');
            let json = ToSqlOutput::Borrowed(ValueRef::Text(text));
            insert.execute((column(*key), first_id, json))?;
        }
        Ok(())
    }
}

/// Appends `value` in decimal ASCII (`itoa`, without `write!`'s formatting machinery: it runs
/// three times per record).
fn push_decimal(text: &mut Vec<u8>, value: u64) {
    text.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
}

/// The offsets of a posting, in the order stored (largest first). A posting that is not a
/// JSON array of non-negative integers means a corrupt database: the error names `column`.
pub(crate) fn offsets(text: &str, column: usize) -> rusqlite::Result<Vec<i64>> {
    let corrupt = || {
        rusqlite::Error::FromSqlConversionFailure(
            column,
            Type::Text,
            format!("a posting's offsets are not a JSON array of integers: {text:?}").into(),
        )
    };
    let items = text
        .trim()
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .ok_or_else(corrupt)?
        .trim();
    if items.is_empty() {
        return Ok(Vec::new());
    }
    items
        .split(',')
        .map(|item| {
            item.trim()
                .parse::<u32>()
                .map(i64::from)
                .map_err(|_| corrupt())
        })
        .collect()
}

/// Deletes the postings of batches that start before `first_id`: the caller has worked out
/// that every record of those batches is gone.
pub(crate) fn prune(connection: &Connection, first_id: i64) -> rusqlite::Result<()> {
    for sql in PRUNE {
        connection.prepare_cached(sql)?.execute([first_id])?;
    }
    Ok(())
}

/// The first id of the batch holding `id`: every record has a tool, so every batch has a tool
/// posting, and the batch holding `id` is the last one starting at or before it. `None` if no
/// posting starts at or before `id`.
pub(crate) fn batch_of(connection: &Connection, id: i64) -> rusqlite::Result<Option<i64>> {
    connection
        .prepare_cached(BATCH_OF)?
        .query_row([id], |row| row.get(0))
}

#[cfg(test)]
mod tests {
    use rusqlite::types::Value;

    use super::*;
    use crate::test_support::{database, explain};

    #[test]
    fn pruning_and_finding_a_batch_seek_the_first_id_indexes() {
        let (_dir, connection) = database();
        for sql in PRUNE.into_iter().chain([BATCH_OF]) {
            let steps = explain(&connection, sql, &[Value::Integer(1)]);
            assert!(
                steps.starts_with("SEARCH audit_") && steps.contains("_by_batch (first_id<"),
                "{sql}: {steps}"
            );
            assert!(!steps.contains("SCAN"), "{sql}: {steps}");
        }
    }

    fn parsed(text: &str) -> Result<Vec<i64>, String> {
        offsets(text, 0).map_err(|error| error.to_string())
    }

    #[test]
    fn offsets_parse_as_written_and_as_sqlite_writes_them() {
        assert_eq!(parsed("[4090,17,3,0]"), Ok(vec![4090, 17, 3, 0]));
        assert_eq!(parsed("[ 2, 1 ]"), Ok(vec![2, 1]));
        assert_eq!(parsed("[0]"), Ok(vec![0]));
        assert_eq!(parsed("[]"), Ok(vec![]));
    }

    #[test]
    fn offsets_are_written_in_decimal() {
        for value in [0, 7, 10, 4095, 65_536, u64::MAX] {
            let mut text = b"[".to_vec();
            push_decimal(&mut text, value);
            assert_eq!(text, format!("[{value}").into_bytes());
        }
    }

    #[test]
    fn a_batch_groups_offsets_by_key_and_reuses_its_lists() {
        let mut groups = Groups::<i64>::default();
        for batch in [&[(3, 0), (1, 1), (3, 2)][..], &[(5, 0), (3, 1)][..]] {
            groups.clear();
            for &(key, offset) in batch {
                groups.add(key, offset);
            }
        }
        let mut written: Vec<(i64, Vec<u64>)> = groups.lists[..groups.slots.len()].to_vec();
        written.sort();
        assert_eq!(written, [(3, vec![1]), (5, vec![0])]);
    }

    #[test]
    fn malformed_offsets_are_errors_not_panics() {
        for text in [
            "",
            "4,3",
            "[4,,3]",
            "[-1]",
            "[1.5]",
            "[\"1\"]",
            "{}",
            "[99999999999]",
        ] {
            assert!(parsed(text).is_err(), "{text:?} should not parse");
        }
    }
}
