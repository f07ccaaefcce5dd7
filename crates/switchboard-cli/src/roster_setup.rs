//! Where the sample `roster` domain keeps its data: with the approvals store.
//!
//! The roster is the domain users copy, so the binary keeps it the way a real domain keeps its
//! data: next to the rest of what the process must not lose.
//!
//! - `--approvals memory`: the seeded in-memory roster of each process.
//! - `--approvals sqlite:PATH`: [`ROSTER_FILE`] in the same directory, so that `serve`,
//!   `approve` and `workflow resume` in separate processes see one roster. The keys are in the
//!   approvals file, so a change and its key's result commit separately (see
//!   `switchboard-roster-sqlite`).
//! - a PostgreSQL approvals store (`--approvals postgres://…`, or `[store] url`): the same
//!   database, in `roster_orgs`, so every node sees one roster, and each change commits together
//!   with its call's idempotency key (the roster store completes the key through the registry's
//!   own idempotency store).
//!
//! The sample organisations are added when the store has none of them yet; a roster already
//! there is kept as it is.

use std::{path::Path, sync::Arc};

use switchboard_approvals_postgres::PostgresIdempotencyStore;
use switchboard_approvals_sqlite::Synchronous;
use switchboard_domain_roster::{RosterBook, RosterState, RosterStore};
use switchboard_roster_postgres::PostgresRosterStore;
use switchboard_roster_sqlite::{SqliteOptions, SqliteRosterStore};

/// The sample roster's domain name.
pub(crate) const ROSTER_DOMAIN: &str = "roster";

/// The roster's file, in the directory of the approvals file.
pub(crate) const ROSTER_FILE: &str = "roster.db";

use crate::{
    app::UsageError,
    postgres_setup::{PostgresUrl, cannot_open},
};

/// The roster in the PostgreSQL database at `url`, completing each change's idempotency key
/// through `keys` (the registry's idempotency store on the same database), seeded with the
/// sample organisations it does not hold yet.
pub(crate) fn on_postgres(
    url: &PostgresUrl,
    keys: Arc<PostgresIdempotencyStore>,
) -> Result<RosterState, UsageError> {
    let store = PostgresRosterStore::open_with(&url.options())
        .map_err(|error| cannot_open("roster", &error))?
        .completing_keys_of(keys);
    seeded(store)
}

/// The roster in [`ROSTER_FILE`] next to the approvals file `approvals`, committing as
/// `synchronous` says (the approvals store's setting).
pub(crate) fn beside_sqlite(
    approvals: &Path,
    synchronous: Synchronous,
) -> Result<RosterState, UsageError> {
    let path = approvals.with_file_name(ROSTER_FILE);
    let store =
        SqliteRosterStore::open_with(&path, SqliteOptions::default().synchronous(synchronous))
            .map_err(|error| {
                UsageError::new(format!(
                    "the roster store `sqlite:{}` cannot be used: {error}",
                    path.display()
                ))
            })?;
    seeded(store)
}

/// `store`, holding the sample organisations it did not hold yet.
fn seeded(store: impl RosterStore) -> Result<RosterState, UsageError> {
    futures::executor::block_on(store.seed(RosterBook::seeded())).map_err(|error| {
        UsageError::new(format!(
            "the roster store cannot take the sample roster: {error}"
        ))
    })?;
    Ok(RosterState::new(Arc::new(store)))
}
