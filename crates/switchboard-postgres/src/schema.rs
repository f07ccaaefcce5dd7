//! A store's tables and how a database gets there: versioned migrations, run when a store
//! opens, once across every node that opens the same database at the same time.
//!
//! Each store's version lives in one shared table, `switchboard_schema` (a row per store), so
//! several stores can share one database (the `[store] url` of a fleet) and each migrates on
//! its own. Version `n` means the store's first `n` migrations have run. Every migration runs
//! in its own transaction that also writes the new version, under a transaction-scoped
//! advisory lock, so a node that dies mid-migration leaves the last complete version and two
//! nodes starting together migrate once. A version above the binary's is refused before
//! anything is written. Migrations only ever append: an entry, once released, never changes.

use tokio_postgres::Client;

use crate::error::QueryError;

/// One step of a schema, from version `index` to `index + 1`.
#[derive(Debug)]
pub struct Migration {
    /// What it does, for logs.
    pub description: &'static str,
    /// The statements, run in the migration's transaction.
    pub sql: &'static str,
}

/// A store's tables: its name and its migrations.
#[derive(Debug)]
pub struct Schema {
    /// The store, as messages name it (`audit`, `approvals`, `workflows`). Also its row in
    /// `switchboard_schema`.
    pub store: &'static str,
    /// Every migration, oldest first. Table names start with the store's name, so stores can
    /// share a database.
    pub migrations: &'static [Migration],
}

impl Schema {
    /// The schema version this build writes and reads: how many migrations there are.
    pub const fn version(&self) -> i64 {
        self.migrations.len() as i64
    }
}

/// The advisory lock every schema change takes ("SBSC"): one migrating node at a time.
const SCHEMA_LOCK: i64 = 0x5342_5343;

/// Why migrating stopped short.
#[derive(Debug)]
pub(crate) enum MigrateError {
    /// Reading or locking the version failed.
    Query(QueryError),
    /// The database holds a newer version than this build knows.
    TooNew(i64),
    /// A migration failed; the store stays at `from`.
    Failed {
        from: i64,
        to: i64,
        error: QueryError,
    },
}

impl From<tokio_postgres::Error> for MigrateError {
    fn from(error: tokio_postgres::Error) -> Self {
        Self::Query(error.into())
    }
}

/// The store's version in the database (0 when it has never been migrated).
pub async fn schema_version(client: &Client, store: &str) -> Result<i64, QueryError> {
    let exists: bool = client
        .query_one("SELECT to_regclass('switchboard_schema') IS NOT NULL", &[])
        .await?
        .get(0);
    if !exists {
        return Ok(0);
    }
    let row = client
        .query_opt(
            "SELECT version FROM switchboard_schema WHERE store = $1",
            &[&store],
        )
        .await?;
    Ok(row.map_or(0, |row| row.get(0)))
}

/// Brings the store's tables to version `target` (at most [`Schema::version`]); a test may
/// stop short to check migrating from an earlier version. Returns the version reached.
pub(crate) async fn migrate_to(
    client: &mut Client,
    schema: &Schema,
    target: i64,
) -> Result<i64, MigrateError> {
    loop {
        let transaction = client.transaction().await?;
        transaction
            .execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
            .await?;
        transaction
            .batch_execute(
                "CREATE TABLE IF NOT EXISTS switchboard_schema (\
                 store TEXT PRIMARY KEY, \
                 version BIGINT NOT NULL, \
                 migrated_at TIMESTAMPTZ NOT NULL DEFAULT now())",
            )
            .await?;
        let from: i64 = transaction
            .query_opt(
                "SELECT version FROM switchboard_schema WHERE store = $1",
                &[&schema.store],
            )
            .await?
            .map_or(0, |row| row.get(0));
        if from > schema.version() {
            return Err(MigrateError::TooNew(from));
        }
        let Some(migration) = usize::try_from(from)
            .ok()
            .filter(|_| from < target)
            .and_then(|applied| schema.migrations.get(applied))
        else {
            transaction.commit().await?;
            return Ok(from);
        };
        let to = from + 1;
        let applied = async {
            transaction.batch_execute(migration.sql).await?;
            transaction
                .execute(
                    "INSERT INTO switchboard_schema (store, version) VALUES ($1, $2) \
                     ON CONFLICT (store) DO UPDATE SET version = excluded.version, \
                     migrated_at = now()",
                    &[&schema.store, &to],
                )
                .await?;
            transaction.commit().await
        }
        .await;
        if let Err(error) = applied {
            return Err(MigrateError::Failed {
                from,
                to,
                error: error.into(),
            });
        }
        tracing::info!(
            store = schema.store,
            from,
            to,
            migration = migration.description,
            "database migrated"
        );
    }
}
