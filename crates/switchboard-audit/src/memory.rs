//! The in-memory audit store: a bounded deque of records behind one reader-writer lock.
//!
//! Appends take the write lock once per batch; queries take the read lock only to collect the
//! matching records' `Arc`s and clone the records after releasing it. When the deque is full
//! the oldest record is evicted, and every eviction is counted in [`AuditStats::evicted`]: a
//! bounded store may forget, but never silently.

use std::{
    collections::VecDeque,
    sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard},
};

use jiff::Timestamp;

use crate::{
    record::{AuditId, AuditRecord},
    store::{AuditError, AuditQuery, AuditStats, AuditStore},
};

/// How many records the in-memory store keeps by default.
pub const DEFAULT_CAPACITY: usize = 65_536;

/// The default [`AuditStore`]: bounded, in memory.
pub struct MemoryAuditStore {
    capacity: usize,
    table: RwLock<Table>,
}

struct Table {
    /// Oldest first; ids increase from front to back.
    records: VecDeque<Arc<AuditRecord>>,
    /// The id the next record gets. Ids start at 1.
    next_id: AuditId,
    evicted: u64,
    expired: u64,
}

impl MemoryAuditStore {
    /// A store holding at most [`DEFAULT_CAPACITY`] records.
    pub fn new() -> Self {
        Self::with_capacity(DEFAULT_CAPACITY)
    }

    /// A store holding at most `capacity` records (at least one).
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            table: RwLock::new(Table {
                records: VecDeque::new(),
                next_id: 1,
                evicted: 0,
                expired: 0,
            }),
        }
    }

    /// The capacity bound.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    // The table is only changed by whole pushes, pops and retains, so a panic while the lock
    // was held cannot have left it half-written: a poisoned lock is used as is.
    fn read(&self) -> RwLockReadGuard<'_, Table> {
        self.table.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Table> {
        self.table.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends synchronously and returns the record's id.
    pub fn insert(&self, record: AuditRecord) -> AuditId {
        let mut table = self.write();
        self.push(&mut table, record)
    }

    fn push(&self, table: &mut Table, mut record: AuditRecord) -> AuditId {
        let id = table.next_id;
        table.next_id += 1;
        record.id = id;
        table.records.push_back(Arc::new(record));
        if table.records.len() > self.capacity {
            table.records.pop_front();
            table.evicted += 1;
        }
        id
    }

    /// Removes up to `limit` records timestamped before `cutoff`, oldest first.
    pub fn expire_before(&self, cutoff: Timestamp, limit: usize) -> u64 {
        let mut table = self.write();
        let mut expired = 0;
        table.records.retain(|record| {
            let expires = expired < limit && record.timestamp < cutoff;
            expired += usize::from(expires);
            !expires
        });
        table.expired += expired as u64;
        expired as u64
    }

    /// Records matching `query`, newest first.
    pub fn select(&self, query: &AuditQuery) -> Vec<AuditRecord> {
        let limit = query.limit.unwrap_or(usize::MAX);
        let found: Vec<Arc<AuditRecord>> = self
            .read()
            .records
            .iter()
            .rev()
            .filter(|record| query.matches(record))
            .take(limit)
            .cloned()
            .collect();
        found.iter().map(|record| (**record).clone()).collect()
    }

    /// The store's counters.
    pub fn counters(&self) -> AuditStats {
        let table = self.read();
        AuditStats {
            appended: table.next_id - 1,
            held: table.records.len() as u64,
            evicted: table.evicted,
            expired: table.expired,
            capacity: Some(self.capacity as u64),
        }
    }
}

impl Default for MemoryAuditStore {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for MemoryAuditStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryAuditStore")
            .field("stats", &self.counters())
            .finish()
    }
}

impl AuditStore for MemoryAuditStore {
    fn append_batch(&self, records: &mut [AuditRecord]) -> Result<(), AuditError> {
        let mut table = self.write();
        for record in records {
            record.id = self.push(&mut table, record.clone());
        }
        Ok(())
    }

    fn query(&self, query: &AuditQuery) -> Result<Vec<AuditRecord>, AuditError> {
        Ok(self.select(query))
    }

    fn delete_before(&self, cutoff: Timestamp, limit: usize) -> Result<u64, AuditError> {
        Ok(self.expire_before(cutoff, limit))
    }

    fn stats(&self) -> AuditStats {
        self.counters()
    }
}

#[cfg(test)]
mod tests;
