//! Why a store could not reach or use its database, in words that say what to do, and never
//! with the password in them.
//!
//! [`OpenError`] is for startup: a wrong URL, a wrong password, a server that is down, a
//! schema newer than the binary. The operator must fix each, so each is one clear line and a
//! non-zero exit, never a panic and never a quiet fallback to memory. [`QueryError`] is for a
//! call once running: the server went away, or did not answer in time; the store maps it to
//! its own error, and the pool reconnects by itself when the server is back.

use std::path::PathBuf;

use tokio_postgres::error::SqlState;

use crate::options::{Target, scrub};

/// Why a store's database could not be opened (see [`Database::open`](crate::Database::open)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The URL is not one.
    #[error(
        "the database URL {target} is not usable: {reason}; write it as \
         postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE"
    )]
    InvalidUrl {
        /// The URL, without its password.
        target: Target,
        /// What is wrong with it.
        reason: String,
    },
    /// The configured password file could not be read.
    #[error(
        "cannot read the password for {target} from {}: {source}; fix the file, or put the \
         password in PGPASSWORD",
        .path.display()
    )]
    PasswordFile {
        /// The database.
        target: Target,
        /// The file.
        path: PathBuf,
        /// Why it could not be read.
        source: std::io::Error,
    },
    /// No server answered at the address.
    #[error(
        "cannot reach PostgreSQL at {address} (for {target}): {reason}; is the server running, \
         and does it accept TCP connections there?"
    )]
    Unreachable {
        /// The database.
        target: Target,
        /// host:port.
        address: String,
        /// What the connection attempt said.
        reason: String,
    },
    /// The server refused the user or the password.
    #[error(
        "PostgreSQL refused the login for {target}: {reason}; check the user and the password \
         (in the URL, PGPASSWORD, or the configured password file)"
    )]
    Authentication {
        /// The database.
        target: Target,
        /// What the server said (it never quotes the password).
        reason: String,
    },
    /// The database named in the URL does not exist.
    #[error(
        "the database of {target} does not exist ({reason}); create it (`createdb`) or point \
         the URL at an existing one"
    )]
    MissingDatabase {
        /// The database.
        target: Target,
        /// What the server said.
        reason: String,
    },
    /// The database was migrated by a newer build.
    #[error(
        "the {store} tables in {target} are at schema version {found}, newer than this \
         binary's {supported}: run a newer switchboard, or point the {store} store at another \
         database"
    )]
    TooNew {
        /// The store (`audit`, `approvals`, `workflows`).
        store: &'static str,
        /// The database.
        target: Target,
        /// The version in the database.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// A migration failed; the database stays at version `from`.
    #[error(
        "migrating the {store} tables in {target} from version {from} to {to} failed: {reason}; \
         the database is left at version {from}"
    )]
    Migration {
        /// The store.
        store: &'static str,
        /// The database.
        target: Target,
        /// The version before.
        from: i64,
        /// The version it was migrating to.
        to: i64,
        /// What the server said.
        reason: String,
    },
    /// Anything else the server or the client library said while opening.
    #[error("cannot open the {store} store in {target}: {reason}")]
    Other {
        /// The store.
        store: &'static str,
        /// The database.
        target: Target,
        /// What was said.
        reason: String,
    },
}

impl OpenError {
    /// Classifies a client error met while opening the `store`'s database.
    pub(crate) fn classify(
        store: &'static str,
        target: &Target,
        address: &str,
        url: &str,
        error: &QueryError,
    ) -> Self {
        let target = target.clone();
        let reason = scrub(&error.to_string(), url);
        match error.sql_state() {
            Some(state)
                if *state == SqlState::INVALID_PASSWORD
                    || *state == SqlState::INVALID_AUTHORIZATION_SPECIFICATION =>
            {
                Self::Authentication { target, reason }
            }
            Some(state) if *state == SqlState::INVALID_CATALOG_NAME => {
                Self::MissingDatabase { target, reason }
            }
            Some(_) => Self::Other {
                store,
                target,
                reason,
            },
            None => Self::Unreachable {
                target,
                address: address.to_owned(),
                reason,
            },
        }
    }
}

/// Why a call into the database failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// The server (or the connection to it) failed the statement.
    #[error("{}", describe(.0))]
    Postgres(#[from] tokio_postgres::Error),
    /// No pooled connection could be had: the server is down or every connection is busy.
    #[error("no connection to the database: {0}")]
    Pool(String),
    /// The call did not finish within the store's call timeout.
    #[error("the database did not answer within {0:?}")]
    Timeout(std::time::Duration),
    /// A call to this database timed out a moment ago and no probe has had an answer since:
    /// refused at once rather than wait another timeout (see `health`).
    #[error(
        "the database has not answered for {for_:?} (a call timed out); calls fail at once \
         until it answers again"
    )]
    Unresponsive {
        /// How long ago the database was found unresponsive.
        for_: std::time::Duration,
    },
    /// The store's runtime is gone (the store is being dropped).
    #[error("the store is shutting down")]
    Closed,
    /// A stored value could not be read back.
    #[error("a stored value is unreadable: {0}")]
    Decode(String),
}

impl QueryError {
    /// The server's SQLSTATE, when the server answered with an error.
    pub fn sql_state(&self) -> Option<&SqlState> {
        match self {
            Self::Postgres(error) => error.code(),
            _ => None,
        }
    }

    /// Whether the server refused the statement for a unique or primary key.
    pub fn is_unique_violation(&self) -> bool {
        self.sql_state() == Some(&SqlState::UNIQUE_VIOLATION)
    }

    /// Whether the failure is the server's or the network's absence (worth retrying later)
    /// rather than the statement's fault.
    pub fn is_unavailable(&self) -> bool {
        match self {
            Self::Postgres(error) => error.as_db_error().is_none() || error.is_closed(),
            Self::Pool(_) | Self::Timeout(_) | Self::Unresponsive { .. } | Self::Closed => true,
            Self::Decode(_) => false,
        }
    }
}

/// What the server or the connection said, whole: the client's own `Display` says only "db
/// error" or "error connecting to server" and keeps the reason in its source.
fn describe(error: &tokio_postgres::Error) -> String {
    if let Some(db) = error.as_db_error() {
        return format!("{} (SQLSTATE {})", db.message(), db.code().code());
    }
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

impl From<deadpool_postgres::PoolError> for QueryError {
    fn from(error: deadpool_postgres::PoolError) -> Self {
        match error {
            deadpool_postgres::PoolError::Backend(error) => Self::Postgres(error),
            other => Self::Pool(other.to_string()),
        }
    }
}
