//! [`ApprovalsDatabase`]: one PostgreSQL database holding both stores, opened once at startup
//! by each node, and what the stores made from it share: the pool, the notification listener
//! and the node's liveness lock.
//!
//! The store traits are synchronous; every operation is one call through
//! `switchboard_postgres::Database::call` (one round trip on the store's own runtime, at most
//! the call timeout), committed before it returns. Several nodes open the same database: the
//! statements themselves (`INSERT … ON CONFLICT`, `UPDATE … WHERE status = 'pending'`) order
//! them, not a lock of this process.

use std::{sync::Arc, time::Duration};

use switchboard_approvals::StoreError;
use switchboard_postgres::{Database, Listener, OpenError, PostgresOptions, QueryError, Target};

use crate::{
    idempotency::PostgresIdempotencyStore,
    liveness::{self, Liveness},
    proposals::PostgresProposalStore,
    schema::{SCHEMA, SCHEMA_VERSION},
    waiter::CHANNELS,
};

/// What every store made from one [`ApprovalsDatabase`] shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) database: Database,
    pub(crate) liveness: Liveness,
}

impl Shared {
    /// The database, as messages name it (no password).
    pub(crate) fn target(&self) -> &Target {
        self.database.target()
    }

    /// The notifications of the store's channels (one listening connection per node).
    pub(crate) fn listener(&self) -> &Listener {
        self.database.listener(CHANNELS)
    }

    /// Logs a failed operation. The idempotency store's trait has no error channel, so it
    /// decides what a failure means for its caller; this only makes it visible.
    pub(crate) fn log_failure(&self, action: &str, error: &QueryError) {
        tracing::error!(
            database = %self.target(),
            %error,
            "the approvals database failed while {action}"
        );
    }

    /// Logs a failed proposal-store operation and returns it as the error its caller gets,
    /// naming the database (never its password).
    pub(crate) fn failure(&self, action: String, error: &QueryError) -> StoreError {
        self.log_failure(&action, error);
        StoreError::new(
            action,
            format!("{error} (approvals database {})", self.target()),
        )
    }
}

/// An approvals database: the `approvals_` tables of one PostgreSQL database, holding
/// proposals and idempotency keys, shared by every node that opens it. Open it once per node
/// at startup and make both stores from it; they share its pool.
#[derive(Debug, Clone)]
pub struct ApprovalsDatabase {
    shared: Arc<Shared>,
}

impl ApprovalsDatabase {
    /// Opens the approvals tables of the database at `url` with the default
    /// [`PostgresOptions`], creating or migrating them to [`SCHEMA_VERSION`].
    ///
    /// Fails with one clear line (never the password) when the URL is not one, the server
    /// cannot be reached, refuses the login, the database does not exist, or its approvals
    /// tables were written by a newer build.
    pub fn open(url: &str) -> Result<Self, OpenError> {
        Self::open_with(&PostgresOptions::new(url))
    }

    /// [`open`](Self::open) with these options.
    pub fn open_with(options: &PostgresOptions) -> Result<Self, OpenError> {
        Self::open_at(options, SCHEMA_VERSION)
    }

    /// [`open_with`](Self::open_with), migrating only to `version`: for tests of the
    /// migrations from every earlier version.
    #[doc(hidden)]
    pub fn open_at(options: &PostgresOptions, version: i64) -> Result<Self, OpenError> {
        let database = Database::open_at(options, &SCHEMA, version)?;
        let shared = Arc::new(Shared {
            database,
            liveness: Liveness::new(),
        });
        liveness::start(&shared, options.connect_timeout);
        // Listening starts now, so that a waiter's first notification is not lost to the
        // listener still connecting.
        shared.listener();
        tracing::debug!(database = %shared.target(), "approvals database open");
        Ok(Self { shared })
    }

    /// The proposal store on this database.
    pub fn proposal_store(&self) -> PostgresProposalStore {
        PostgresProposalStore::new(Arc::clone(&self.shared))
    }

    /// An idempotency store on this database, keeping each first result for `retention` after
    /// it completed. Make one per node: the in-flight part of the keys (the racers of this
    /// node waiting on a key this store runs) lives in the store value.
    pub fn idempotency_store(&self, retention: Duration) -> PostgresIdempotencyStore {
        PostgresIdempotencyStore::new(Arc::clone(&self.shared), retention)
    }

    /// The database, as messages name it (the URL without its password).
    pub fn target(&self) -> &Target {
        self.shared.target()
    }

    /// The schema version of the approvals tables (always [`SCHEMA_VERSION`] once open).
    pub fn schema_version(&self) -> i64 {
        SCHEMA_VERSION
    }
}
