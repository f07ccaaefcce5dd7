//! [`PostgresRosterStore`]: the roster's store on the `roster_orgs` table.
//!
//! A load is one `SELECT` of the organisation's row. A change is one transaction:
//!
//! 1. `SELECT … FOR UPDATE` locks the organisation's row (made first, empty, if it has none),
//!    so a change on another node waits for this one and then sees what it made;
//! 2. the change runs on the row's roster, with the domain's rules; if they refuse, the
//!    transaction rolls back and nothing is kept;
//! 3. `UPDATE` writes the changed roster;
//! 4. with the registry's idempotency store, the call's key is completed with the change's
//!    output (`complete_in`); a key whose claim this node no longer holds rolls everything
//!    back, since another node may be running the same action;
//! 5. `COMMIT`: the change and its first result are kept together, or neither is.
//!
//! The change's function runs on the database's runtime, inside the transaction; a panic in
//! it rolls the transaction back and is resumed in the calling tool, where the registry
//! reports it like any tool's panic.

use std::sync::Arc;

use switchboard_approvals::{IdempotencyScope, StoredOutcome};
use switchboard_approvals_postgres::PostgresIdempotencyStore;
use switchboard_core::{ActionKey, BoxFuture, OrgId};
use switchboard_domain_roster::{
    Applied, Changed, OrgRoster, RosterBook, RosterChange, RosterError, RosterStore,
};
use switchboard_postgres::{Client, Database, OpenError, PostgresOptions, QueryError, Target};

use crate::schema::SCHEMA;

/// The roster in PostgreSQL, shared by every node on the database.
pub struct PostgresRosterStore {
    database: Arc<Database>,
    /// The registry's idempotency store, when keys are completed in a change's transaction.
    keys: Option<Arc<PostgresIdempotencyStore>>,
}

impl std::fmt::Debug for PostgresRosterStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresRosterStore")
            .field("database", self.database.target())
            .field("completes_keys", &self.keys.is_some())
            .finish()
    }
}

impl PostgresRosterStore {
    /// Connects to `url` and migrates the roster's table (see [`Database::open`]): a wrong URL
    /// or password, a server that is down, or a table newer than this build is an
    /// [`OpenError`], one line, never the password.
    pub fn open(url: &str) -> Result<Self, OpenError> {
        Self::open_with(&PostgresOptions::new(url))
    }

    /// [`open`](Self::open) with these options.
    pub fn open_with(options: &PostgresOptions) -> Result<Self, OpenError> {
        Self::open_at(options, SCHEMA.version())
    }

    /// [`open_with`](Self::open_with), migrating only to `version`: for tests of the
    /// migrations from every earlier version.
    #[doc(hidden)]
    pub fn open_at(options: &PostgresOptions, version: i64) -> Result<Self, OpenError> {
        let database = Database::open_at(options, &SCHEMA, version)?;
        tracing::debug!(database = %database.target(), "roster database open");
        Ok(Self {
            database: Arc::new(database),
            keys: None,
        })
    }

    /// Completes each change's idempotency key in the change's own transaction, through
    /// `keys`, which must be the idempotency store the registry claims keys in (the same value:
    /// a key is completed by the store that claimed it) and on the same database.
    #[must_use]
    pub fn completing_keys_of(mut self, keys: Arc<PostgresIdempotencyStore>) -> Self {
        self.keys = Some(keys);
        self
    }

    /// The database, as messages name it (the URL without its password).
    pub fn target(&self) -> &Target {
        self.database.target()
    }
}

fn unavailable(error: &QueryError) -> RosterError {
    RosterError::Unavailable {
        reason: error.to_string(),
    }
}

fn decode(org_id: &str, text: &str) -> Result<OrgRoster, RosterError> {
    serde_json::from_str(text).map_err(|error| RosterError::Unavailable {
        reason: format!("the stored roster of `{org_id}` cannot be read: {error}"),
    })
}

/// Locks the row of `org` for this transaction, making it (empty) first if it has none, and
/// returns its roster as stored.
async fn lock_row(
    transaction: &switchboard_postgres::tokio_postgres::Transaction<'_>,
    org: &str,
) -> Result<String, QueryError> {
    let select = "SELECT roster FROM roster_orgs WHERE org_id = $1 FOR UPDATE";
    if let Some(row) = transaction.query_opt(select, &[&org]).await? {
        return Ok(row.try_get(0)?);
    }
    let empty = serde_json::to_string(&OrgRoster::default()).unwrap_or_else(|_| "{}".to_owned());
    transaction
        .execute(
            "INSERT INTO roster_orgs (org_id, roster) VALUES ($1, $2) \
             ON CONFLICT (org_id) DO NOTHING",
            &[&org, &empty],
        )
        .await?;
    let row = transaction.query_one(select, &[&org]).await?;
    Ok(row.try_get(0)?)
}

/// The transaction of one change (see the module docs).
async fn apply(
    mut client: Client,
    org_id: OrgId,
    completion: Option<(Arc<PostgresIdempotencyStore>, ActionKey)>,
    change: RosterChange,
) -> Result<Applied, QueryError> {
    let org = org_id.to_string();
    let transaction = client.transaction().await?;
    let part = match decode(&org, &lock_row(&transaction, &org).await?) {
        Ok(part) => part,
        Err(error) => return Ok(Applied::Refused(error)),
    };
    let mut book = RosterBook::of_org(&org_id, part);
    let changed = match Applied::of(change, &mut book) {
        Applied::Kept(changed) => changed,
        not_kept => return Ok(not_kept),
    };
    let text = match book.take_org_part(&org_id).to_stored() {
        Ok(text) => text,
        Err(error) => return Ok(Applied::Refused(error)),
    };
    transaction
        .execute(
            "UPDATE roster_orgs SET roster = $2, version = version + 1 WHERE org_id = $1",
            &[&org, &text],
        )
        .await?;
    if let Some((keys, action)) = completion {
        let scope = IdempotencyScope::new(action.org_id, action.key);
        let outcome = StoredOutcome::ok(action.action_id, changed.output.clone());
        if !keys.complete_in(&transaction, &scope, &outcome).await? {
            return Ok(Applied::Refused(RosterError::Unavailable {
                reason: format!(
                    "idempotency key `{}` is no longer held by this node (its claim expired \
                     and may have been taken over), so the change was not made",
                    scope.key
                ),
            }));
        }
    }
    transaction.commit().await?;
    Ok(Applied::Kept(changed))
}

impl RosterStore for PostgresRosterStore {
    fn load(&self, org_id: OrgId) -> BoxFuture<'_, Result<RosterBook, RosterError>> {
        Box::pin(async move {
            let org = org_id.to_string();
            let text = self
                .database
                .run(move |client| async move {
                    let statement = client
                        .prepare_cached("SELECT roster FROM roster_orgs WHERE org_id = $1")
                        .await?;
                    match client.query_opt(&statement, &[&org]).await? {
                        Some(row) => Ok(Some(row.try_get::<_, String>(0)?)),
                        None => Ok(None),
                    }
                })
                .await
                .map_err(|error| unavailable(&error))?;
            let part = match text {
                Some(text) => decode(org_id.as_str(), &text)?,
                None => OrgRoster::default(),
            };
            Ok(RosterBook::of_org(&org_id, part))
        })
    }

    fn change(
        &self,
        org_id: OrgId,
        action: Option<ActionKey>,
        change: RosterChange,
    ) -> BoxFuture<'_, Result<Changed, RosterError>> {
        let completion = self.keys.clone().zip(action);
        Box::pin(async move {
            self.database
                .run(move |client| apply(client, org_id, completion, change))
                .await
                .map_err(|error| unavailable(&error))?
                .into_result()
        })
    }

    fn seed(&self, book: RosterBook) -> BoxFuture<'_, Result<(), RosterError>> {
        Box::pin(async move {
            let rows = book.into_stored_parts()?;
            self.database
                .run(move |client| async move {
                    let statement = client
                        .prepare_cached(
                            "INSERT INTO roster_orgs (org_id, roster) VALUES ($1, $2) \
                             ON CONFLICT (org_id) DO NOTHING",
                        )
                        .await?;
                    for (org, text) in &rows {
                        client.execute(&statement, &[org, text]).await?;
                    }
                    Ok(())
                })
                .await
                .map_err(|error| unavailable(&error))
        })
    }
}
