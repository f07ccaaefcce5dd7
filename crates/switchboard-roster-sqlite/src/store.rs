//! [`SqliteRosterStore`]: the roster's store on the `roster_orgs` table of one SQLite file.
//!
//! A load is one `SELECT` of the organisation's row (no row is an empty roster). A change is
//! one transaction:
//!
//! 1. `BEGIN IMMEDIATE` takes the file's write lock, so a change in another process (`serve`,
//!    and `switchboard approve` resuming a proposal in a second one) waits for this one, up to
//!    the busy timeout, and then sees what it made;
//! 2. the organisation's row is read and the change runs on it, with the domain's rules; if
//!    they refuse, the transaction rolls back and nothing is kept;
//! 3. the changed roster is written (the row is made if the organisation had none);
//! 4. `COMMIT`.
//!
//! SQLite admits one writer per file, so changes of different organisations are serialized
//! too; each is one short transaction. Within a process, the store's one connection is behind
//! a mutex, and every operation runs on the Tokio runtime's blocking pool (`spawn_blocking`):
//! a tool's task waits for it without holding a runtime worker. Called outside a runtime (a
//! startup that seeds the store with `futures::executor::block_on`), an operation runs on the
//! calling thread.
//!
//! The change's function runs inside the transaction, on the blocking pool; a panic in it rolls
//! the transaction back and is resumed in the calling task, where the registry reports it like
//! any tool's panic.
//!
//! # The change and its idempotency key are two commits
//!
//! The SQLite idempotency store (`switchboard-approvals-sqlite`) keeps its keys in another
//! file, and SQLite does not commit two files atomically (an `ATTACH`ed database in WAL mode is
//! atomic per file only), so this store ignores the call's [`ActionKey`]: the change commits
//! here, and the registry completes the key with the tool's output in its own file right after
//! the tool returns. In the window between the two commits (the rest of the tool's body and
//! the registry's write of the key), a process that dies keeps the change but not the key's
//! result: the key stays claimed by a process that is gone, and a retry with it is answered
//! `outcome_unknown` without running, until the idempotency retention has passed since the
//! claim; a retry after that runs the change again. Choose the retention longer than anyone
//! will retry. The PostgreSQL store, whose keys live in the same database, closes the window by
//! committing both in one transaction.

use std::{panic::resume_unwind, path::Path, sync::Arc};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};
use switchboard_core::{ActionKey, BoxFuture, OrgId};
use switchboard_domain_roster::{
    Applied, Changed, OrgRoster, RosterBook, RosterChange, RosterError, RosterStore,
};
use switchboard_sqlite::{ConnectionSettings, OpenError, SharedConnection};

use crate::schema::{SCHEMA, SCHEMA_VERSION};

/// How the store uses its file: when a commit counts as done (default
/// [`Synchronous::Full`](switchboard_sqlite::Synchronous::Full): a change is on stable storage
/// before the tool that made it returns), and how long a change waits for another process's
/// write lock before failing with [`RosterError::Unavailable`] (default 5 s).
pub type SqliteOptions = ConnectionSettings;

/// Logs a failed operation and returns it as the error its caller gets, naming the file.
fn unavailable(database: &SharedConnection, action: &str, error: &rusqlite::Error) -> RosterError {
    RosterError::Unavailable {
        reason: format!("{action} failed: {}", database.failure(action, error)),
    }
}

fn decode(
    database: &SharedConnection,
    org_id: &OrgId,
    text: &str,
) -> Result<OrgRoster, RosterError> {
    serde_json::from_str(text).map_err(|error| RosterError::Unavailable {
        reason: format!(
            "the stored roster of `{org_id}` in {} cannot be read: {error}",
            database.path().display()
        ),
    })
}

/// The roster in a SQLite file, shared by every process that opens it.
#[derive(Debug)]
pub struct SqliteRosterStore {
    database: Arc<SharedConnection>,
}

impl SqliteRosterStore {
    /// Opens the roster database at `path` with the default [`SqliteOptions`], creating the
    /// file if it does not exist and migrating its schema to [`SCHEMA_VERSION`].
    ///
    /// Fails, without changing the file, when its directory is missing, when it is not a
    /// database, is damaged, belongs to another application (or is another store's, such as an
    /// approvals database), was written by a newer build, or cannot be written.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, OpenError> {
        Self::open_with(path, SqliteOptions::default())
    }

    /// [`open`](Self::open) with these options.
    pub fn open_with(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self, OpenError> {
        let database = SharedConnection::open(path, &SCHEMA, options)?;
        let orgs: i64 = database.first_read("counting its organisations", |connection| {
            connection.query_row("SELECT count(*) FROM roster_orgs", [], |row| row.get(0))
        })?;
        tracing::debug!(path = %database.path().display(), orgs, "roster database open");
        Ok(Self {
            database: Arc::new(database),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        self.database.path()
    }

    /// The schema version of the file (always [`SCHEMA_VERSION`] once open).
    pub fn schema_version(&self) -> i64 {
        SCHEMA_VERSION
    }

    /// Runs `operation` on the database, on the runtime's blocking pool when there is a
    /// runtime, on this thread otherwise.
    async fn run<T: Send + 'static>(
        &self,
        operation: impl FnOnce(&SharedConnection) -> Result<T, RosterError> + Send + 'static,
    ) -> Result<T, RosterError> {
        let database = Arc::clone(&self.database);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return operation(&database);
        };
        match runtime.spawn_blocking(move || operation(&database)).await {
            Ok(done) => done,
            Err(error) => match error.try_into_panic() {
                Ok(panic) => resume_unwind(panic),
                Err(error) => Err(RosterError::Unavailable {
                    reason: format!(
                        "the roster database operation did not run: {error} (the runtime is \
                         shutting down)"
                    ),
                }),
            },
        }
    }
}

/// Reads the roster of `org_id` as stored, if it has a row.
fn read_row(connection: &Connection, org_id: &OrgId) -> rusqlite::Result<Option<String>> {
    connection
        .prepare_cached("SELECT roster FROM roster_orgs WHERE org_id = ?1")?
        .query_row([org_id.as_str()], |row| row.get(0))
        .optional()
}

/// The transaction of one change (see the module docs).
fn apply(
    database: &SharedConnection,
    org_id: &OrgId,
    change: RosterChange,
) -> Result<Applied, RosterError> {
    let action = format!("changing the roster of `{org_id}`");
    let failed = |error: rusqlite::Error| unavailable(database, &action, &error);
    let mut connection = database.connection();
    let transaction = connection
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(failed)?;
    let part = match read_row(&transaction, org_id).map_err(failed)? {
        Some(text) => decode(database, org_id, &text)?,
        None => OrgRoster::default(),
    };
    let mut book = RosterBook::of_org(org_id, part);
    let changed = match Applied::of(change, &mut book) {
        Applied::Kept(changed) => changed,
        refused @ Applied::Refused(_) => {
            transaction.rollback().map_err(failed)?;
            return Ok(refused);
        }
        panicked @ Applied::Panicked(_) => {
            if let Err(error) = transaction.rollback() {
                // The panic is what the caller must see; the connection is rolled back when
                // it next begins, or closed with the store.
                database.log_failure(&action, &error);
            }
            return Ok(panicked);
        }
    };
    let text = book.take_org_part(org_id).to_stored()?;
    transaction
        .prepare_cached(
            "INSERT INTO roster_orgs (org_id, roster) VALUES (?1, ?2) \
             ON CONFLICT (org_id) DO UPDATE SET roster = excluded.roster, version = version + 1",
        )
        .and_then(|mut statement| statement.execute((org_id.as_str(), &text)))
        .map_err(failed)?;
    transaction.commit().map_err(failed)?;
    Ok(Applied::Kept(changed))
}

impl RosterStore for SqliteRosterStore {
    fn load(&self, org_id: OrgId) -> BoxFuture<'_, Result<RosterBook, RosterError>> {
        Box::pin(self.run(move |database| {
            let text = read_row(&database.connection(), &org_id).map_err(|error| {
                unavailable(
                    database,
                    &format!("reading the roster of `{org_id}`"),
                    &error,
                )
            })?;
            let part = match text {
                Some(text) => decode(database, &org_id, &text)?,
                None => OrgRoster::default(),
            };
            Ok(RosterBook::of_org(&org_id, part))
        }))
    }

    /// Applies `change` in one immediate transaction. `action` is ignored: the idempotency
    /// keys are in another file (see the module docs).
    fn change(
        &self,
        org_id: OrgId,
        _action: Option<ActionKey>,
        change: RosterChange,
    ) -> BoxFuture<'_, Result<Changed, RosterError>> {
        Box::pin(async move {
            self.run(move |database| apply(database, &org_id, change))
                .await?
                .into_result()
        })
    }

    fn seed(&self, book: RosterBook) -> BoxFuture<'_, Result<(), RosterError>> {
        Box::pin(async move {
            let rows = book.into_stored_parts()?;
            self.run(move |database| {
                let failed =
                    |error: rusqlite::Error| unavailable(database, "seeding the roster", &error);
                let mut connection = database.connection();
                let transaction = connection
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .map_err(failed)?;
                {
                    let mut statement = transaction
                        .prepare_cached(
                            "INSERT INTO roster_orgs (org_id, roster) VALUES (?1, ?2) \
                             ON CONFLICT (org_id) DO NOTHING",
                        )
                        .map_err(failed)?;
                    for (org, text) in &rows {
                        statement.execute((org, text)).map_err(failed)?;
                    }
                }
                transaction.commit().map_err(failed)
            })
            .await
        })
    }
}
