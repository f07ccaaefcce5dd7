//! What the audit store benchmarks share: the records they append, and the median of their
//! rounds.
//!
//! Records are distinct, like real calls': each batch takes the next slice of a pool of
//! prebuilt records (a correlation id per 4 records, 50 orgs, 10 tools, 200 users, one failure
//! in 20). Correlation ids grow with time, like the UUIDv7s the CLI and the MCP server mint, or
//! scatter, like trace ids a caller passes in. When the pool is used up it starts over with new
//! correlation ids, minted before the next batch is timed.
//!
//! Two benchmarks use it: this crate's `writer` and `switchboard-audit-postgres`'s `append`,
//! which includes this file by its path, so that both stores append exactly the same records.

use jiff::Timestamp;
use switchboard_audit::{AuditRecord, Outcome, digest_json};
use switchboard_core::{Category, CorrelationId, ErrorKind, Initiator};

/// The records of one append.
pub(crate) const BATCH: usize = 1_024;
/// The records prebuilt for a case.
pub(crate) const POOL: usize = 64 * BATCH;

/// A case's records: the pool, and where its next batch starts.
pub(crate) struct Records {
    pool: Vec<AuditRecord>,
    ordered: bool,
    next: usize,
    passes: u64,
}

impl Records {
    /// A pool of [`POOL`] records whose correlation ids grow with time (`ordered`) or scatter.
    pub(crate) fn new(ordered: bool) -> Self {
        Self {
            pool: pool(ordered),
            ordered,
            next: 0,
            passes: 0,
        }
    }

    /// The next [`BATCH`] records; once the pool is used up, every record of it first gets a
    /// new correlation id.
    pub(crate) fn next_batch(&mut self) -> &mut [AuditRecord] {
        if self.next + BATCH > self.pool.len() {
            self.passes += 1;
            let first = self.passes * POOL as u64;
            for (n, record) in (first..).zip(&mut self.pool) {
                record.correlation_id = Some(correlation_id(n, self.ordered));
            }
            self.next = 0;
        }
        let start = self.next;
        self.next += BATCH;
        &mut self.pool[start..start + BATCH]
    }
}

/// The median of `values`.
pub(crate) fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// A scrambled but deterministic number, for values that scatter.
fn scatter(n: u64) -> u64 {
    let mut x = n.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The correlation id of the `n`th record ever made (four records share one): time-ordered
/// ids grow with `n`, random ones scatter.
fn correlation_id(n: u64, ordered: bool) -> CorrelationId {
    let id = n / 4;
    if ordered {
        format!("bench-{id:016x}{:016x}", scatter(id)).into()
    } else {
        format!("bench-{:016x}{id:016x}", scatter(id)).into()
    }
}

fn pool(ordered: bool) -> Vec<AuditRecord> {
    let input_hash = digest_json(&serde_json::json!({ "from": "2026-11-23", "to": "2026-11-29" }))
        .expect("JSON has a digest");
    let output_hash = digest_json(&serde_json::json!({ "shifts": [] })).expect("JSON has a digest");
    let now = Timestamp::now();
    (0..POOL as u64)
        .map(|n| {
            let failed = n.is_multiple_of(20);
            AuditRecord {
                asks: Vec::new(),
                switch: None,
                node: None,
                id: 0,
                timestamp: now,
                tool: format!("roster_tool_{}", n % 10).into(),
                domain: Some("roster".into()),
                category: Some(Category::Read),
                org_id: Some(format!("org-{}", scatter(n) % 50).into()),
                user_id: Some(format!("user-{}", scatter(n + 1) % 200).into()),
                session_id: Some(format!("session-{:x}", scatter(n / 16)).into()),
                correlation_id: Some(correlation_id(n, ordered)),
                initiator: Initiator::Human,
                input_hash: Some(input_hash),
                output_hash: (!failed).then_some(output_hash),
                digest_error: None,
                duration_us: 40 + n % 100,
                outcome: if failed {
                    Outcome::Error(ErrorKind::PermissionDenied)
                } else {
                    Outcome::Ok
                },
                action: None,
            }
        })
        .collect()
}
