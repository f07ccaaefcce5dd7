//! The in-memory audit table: a fixed ring of slots, like an ETS table that readers
//! and writers hit directly.
//!
//! A writer takes the next id from one atomic counter and puts its record into slot
//! `id % capacity`. Each slot has its own reader-writer lock, held only for a pointer swap (a
//! writer) or a reference-count bump (a reader): there is no table-wide lock, so a query
//! scanning the table never holds up writers beyond one slot for a few nanoseconds, and writers
//! never wait for each other except on the same slot. When the ring is full the oldest record
//! is evicted, and every eviction is counted in [`AuditStats::evicted`]: a bounded table may
//! forget, but never silently.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use std::sync::{PoisonError, RwLock};

use jiff::Timestamp;

use crate::{
    record::{AuditId, AuditRecord},
    store::{AuditError, AuditQuery, AuditStats, AuditStore},
};

/// How many records the in-memory table keeps by default.
pub const DEFAULT_CAPACITY: usize = 65_536;

/// The default [`AuditStore`]: bounded, concurrent, in memory.
pub struct MemoryAuditStore {
    slots: Box<[RwLock<Option<Arc<AuditRecord>>>]>,
    /// The id the next record gets. Ids start at 1.
    next_id: AtomicU64,
    evicted: AtomicU64,
    expired: AtomicU64,
}

impl MemoryAuditStore {
    /// A table holding at most [`DEFAULT_CAPACITY`] records.
    pub fn new() -> Self {
        Self::with_capacity(DEFAULT_CAPACITY)
    }

    /// A table holding at most `capacity` records (at least one).
    pub fn with_capacity(capacity: usize) -> Self {
        let slots = (0..capacity.max(1)).map(|_| RwLock::new(None)).collect();
        Self {
            slots,
            next_id: AtomicU64::new(1),
            evicted: AtomicU64::new(0),
            expired: AtomicU64::new(0),
        }
    }

    /// The capacity bound.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    fn slot(&self, id: AuditId) -> &RwLock<Option<Arc<AuditRecord>>> {
        &self.slots[(id % self.slots.len() as u64) as usize]
    }

    /// Appends synchronously and returns the record's id.
    pub fn insert(&self, mut record: AuditRecord) -> AuditId {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        record.id = id;
        let record = Arc::new(record);
        // A slot's lock guards a plain pointer; a panic while it was held cannot have left it
        // half-written, so a poisoned lock is used as is.
        let mut slot = self
            .slot(id)
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        match slot.as_ref().map(|held| held.id) {
            // A writer `capacity` records ahead already took this slot: ours is the oldest,
            // so it is the one evicted.
            Some(held) if held > id => {}
            Some(_) => {
                *slot = Some(record);
            }
            None => {
                *slot = Some(record);
                return id;
            }
        }
        self.evicted.fetch_add(1, Ordering::Relaxed);
        id
    }

    /// The ids the ring may still hold, oldest to newest (empty when nothing was appended).
    fn window(&self) -> std::ops::RangeInclusive<AuditId> {
        let newest = self.next_id.load(Ordering::Acquire).saturating_sub(1);
        let oldest = newest.saturating_sub(self.slots.len() as u64 - 1).max(1);
        oldest..=newest
    }

    /// Removes up to `limit` records timestamped before `cutoff`, oldest first.
    pub fn expire_before(&self, cutoff: Timestamp, limit: usize) -> u64 {
        let mut expired = 0;
        for id in self.window() {
            if expired as usize >= limit {
                break;
            }
            let mut slot = self
                .slot(id)
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            if slot
                .as_ref()
                .is_some_and(|record| record.id == id && record.timestamp < cutoff)
            {
                *slot = None;
                expired += 1;
            }
        }
        self.expired.fetch_add(expired, Ordering::Relaxed);
        expired
    }

    /// Records matching `query`, newest first.
    pub fn select(&self, query: &AuditQuery) -> Vec<AuditRecord> {
        let (oldest, newest) = self.window().into_inner();
        let newest = match query.before_id {
            Some(before) => newest.min(before.saturating_sub(1)),
            None => newest,
        };
        let limit = query.limit.unwrap_or(usize::MAX);
        let mut found = Vec::new();
        if limit == 0 || newest < oldest {
            return found;
        }
        for id in (oldest..=newest).rev() {
            let held = self
                .slot(id)
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            // The slot may hold a newer record (ours was evicted) or none yet (its writer
            // has not finished): either way the record with this id is not there to report.
            if let Some(record) = held.filter(|record| record.id == id)
                && query.matches(&record)
            {
                found.push((*record).clone());
                if found.len() == limit {
                    break;
                }
            }
        }
        found
    }

    /// The table's counters.
    pub fn counters(&self) -> AuditStats {
        let appended = self.next_id.load(Ordering::Acquire).saturating_sub(1);
        let evicted = self.evicted.load(Ordering::Acquire);
        let expired = self.expired.load(Ordering::Acquire);
        AuditStats {
            appended,
            held: appended.saturating_sub(evicted).saturating_sub(expired),
            evicted,
            expired,
            capacity: Some(self.slots.len() as u64),
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
        for record in records {
            record.id = self.insert(record.clone());
        }
        Ok(())
    }

    /// Moves the records into the table: `insert` cannot fail.
    fn append_taken(
        &self,
        records: &mut Vec<AuditRecord>,
        ids: &mut Vec<AuditId>,
    ) -> Result<(), AuditError> {
        ids.extend(records.drain(..).map(|record| self.insert(record)));
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
