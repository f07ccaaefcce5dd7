//! A fresh database for each test, on the server `cargo xtask test` starts.
//!
//! nextest runs every test in a process of its own, so a cluster per test would cost each test
//! the better part of a second and hundreds of servers at once. Instead `cargo xtask test`
//! starts one cluster and passes its URL in [`URL_VARIABLE`]; each test creates a database of
//! its own there (`CREATE DATABASE sb_test_<uuid>`, a copy of the empty `template1`), so tests
//! share a server but never see each other's tables. Without the variable a test fails, with
//! a message naming the command to run: it never skips.

use std::time::Duration;

use tokio_postgres::{Client, Config, NoTls};
use uuid::Uuid;

use crate::DatabaseError;

/// The variable that holds the URL of the server tests create their databases on: a
/// superuser's (or a user allowed to create databases) `postgres://` URL.
pub const URL_VARIABLE: &str = "SWITCHBOARD_TEST_POSTGRES_URL";

/// Every test database's name starts with this.
pub const DATABASE_PREFIX: &str = "sb_test_";

/// How long connecting to the test server may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A fresh, empty database on the server [`URL_VARIABLE`] names.
///
/// Call it from a tokio runtime (a `#[tokio::test]`): the connection that creates the database
/// runs on it.
///
/// # Errors
/// [`DatabaseError::NotConfigured`] when the variable is not set (the message says to run the
/// tests through `cargo xtask test`), and the others when the server cannot be reached or
/// refuses.
pub async fn test_database() -> Result<TestDatabase, DatabaseError> {
    let server_url = configured_server(std::env::var(URL_VARIABLE).ok())?;
    TestDatabase::create(&server_url).await
}

/// The server URL from [`URL_VARIABLE`]'s value; unset and empty are the same.
fn configured_server(value: Option<String>) -> Result<String, DatabaseError> {
    value
        .filter(|url| !url.trim().is_empty())
        .ok_or(DatabaseError::NotConfigured)
}

/// A database created for one test. Dropping it drops the database (`WITH (FORCE)`, so
/// connections still open are closed); [`TestDatabase::drop_database`] does the same and says
/// whether it worked.
#[derive(Debug)]
pub struct TestDatabase {
    name: String,
    url: String,
    server_url: String,
    dropped: bool,
}

impl TestDatabase {
    /// Creates a fresh database on the server at `server_url` (a URL whose user may create
    /// databases, such as [`TestCluster::url`](crate::TestCluster::url)).
    ///
    /// # Errors
    /// When the URL is no `postgres://` URL, or the server cannot be reached or refuses.
    pub async fn create(server_url: &str) -> Result<Self, DatabaseError> {
        let name = format!("{DATABASE_PREFIX}{}", Uuid::new_v4().simple());
        let url = with_database(server_url, &name)?;
        let client = connect(server_url).await?;
        let statement = format!("CREATE DATABASE {name}{}", strategy(&client).await);
        client
            .batch_execute(&statement)
            .await
            .map_err(|source| DatabaseError::Statement {
                statement,
                url: redact(server_url),
                source,
            })?;
        tracing::debug!(database = %name, "created a test database");
        Ok(Self {
            name,
            url,
            server_url: server_url.to_owned(),
            dropped: false,
        })
    }

    /// The database's URL, with the server's user and password.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The database's name (`sb_test_<uuid>`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The database's connection settings, for a client or a pool.
    ///
    /// # Errors
    /// Never for a URL [`TestDatabase::create`] accepted; the type says it could.
    pub fn config(&self) -> Result<Config, DatabaseError> {
        parse(&self.url)
    }

    /// A client connected to the database; its connection runs on the current tokio runtime.
    ///
    /// # Errors
    /// When the server cannot be reached or refuses.
    pub async fn connect(&self) -> Result<Client, DatabaseError> {
        connect(&self.url).await
    }

    /// Drops the database now, closing the connections still open to it.
    ///
    /// # Errors
    /// When the server cannot be reached or refuses.
    pub async fn drop_database(mut self) -> Result<(), DatabaseError> {
        self.dropped = true;
        drop_database(&self.server_url, &self.name).await
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if self.dropped {
            return;
        }
        // A destructor cannot await, and the test's runtime may be the current thread: a
        // thread of its own with a runtime of its own drops the database.
        let server_url = self.server_url.clone();
        let name = self.name.clone();
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|error| error.to_string())?;
            runtime
                .block_on(drop_database(&server_url, &name))
                .map_err(|error| error.to_string())
        })
        .join();
        match dropped {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                tracing::warn!(database = %self.name, %error, "cannot drop a test database")
            }
            Err(_) => tracing::warn!(database = %self.name, "dropping a test database panicked"),
        }
    }
}

/// `STRATEGY = FILE_COPY` where the server has it (PostgreSQL 15 and later): copying the
/// template's files is about three times faster than writing them through the WAL, the
/// default, for a template as small as `template1`.
async fn strategy(client: &Client) -> &'static str {
    let version = client
        .query_one("SELECT current_setting('server_version_num')::int", &[])
        .await
        .map(|row| row.get::<_, i32>(0))
        .unwrap_or(0);
    if version >= 150_000 {
        " STRATEGY = FILE_COPY"
    } else {
        ""
    }
}

async fn drop_database(server_url: &str, name: &str) -> Result<(), DatabaseError> {
    let client = connect(server_url).await?;
    let statement = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
    client
        .batch_execute(&statement)
        .await
        .map_err(|source| DatabaseError::Statement {
            statement,
            url: redact(server_url),
            source,
        })
}

/// Connects to `url`, driving the connection on the current tokio runtime.
async fn connect(url: &str) -> Result<Client, DatabaseError> {
    let mut config = parse(url)?;
    config.connect_timeout(CONNECT_TIMEOUT);
    let (client, connection) =
        config
            .connect(NoTls)
            .await
            .map_err(|source| DatabaseError::Connect {
                url: redact(url),
                source,
            })?;
    tokio::spawn(async move {
        if let Err(error) = connection.await {
            tracing::debug!(%error, "a test database connection ended with an error");
        }
    });
    Ok(client)
}

fn parse(url: &str) -> Result<Config, DatabaseError> {
    url.parse()
        .map_err(|error: tokio_postgres::Error| DatabaseError::BadUrl {
            url: redact(url),
            reason: error.to_string(),
        })
}

/// `url` naming `database` instead of its own database; its query string is kept.
fn with_database(url: &str, database: &str) -> Result<String, DatabaseError> {
    let bad = |reason: &str| DatabaseError::BadUrl {
        url: redact(url),
        reason: reason.to_owned(),
    };
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| bad("it has no scheme"))?;
    if scheme != "postgres" && scheme != "postgresql" {
        return Err(bad("its scheme is not postgres or postgresql"));
    }
    let (before_query, query) = match rest.split_once('?') {
        Some((before, query)) => (before, Some(query)),
        None => (rest, None),
    };
    let authority = before_query
        .split_once('/')
        .map_or(before_query, |(authority, _)| authority);
    if authority.is_empty() {
        return Err(bad("it names no host"));
    }
    Ok(match query {
        Some(query) => format!("{scheme}://{authority}/{database}?{query}"),
        None => format!("{scheme}://{authority}/{database}"),
    })
}

/// `url` with its password replaced by `***`, for messages.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "(not a URL)".to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let Some((userinfo, host)) = authority.rsplit_once('@') else {
        return url.to_owned();
    };
    match userinfo.split_once(':') {
        Some((user, _password)) => format!("{scheme}://{user}:***@{host}{tail}"),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_url_keeps_the_server_and_the_options() {
        let name = |url: &str| with_database(url, "sb_test_x").expect("a postgres URL");
        assert_eq!(
            name("postgres://u:p@127.0.0.1:5432/postgres"),
            "postgres://u:p@127.0.0.1:5432/sb_test_x"
        );
        assert_eq!(
            name("postgresql://u@db.example:6000"),
            "postgresql://u@db.example:6000/sb_test_x"
        );
        assert_eq!(
            name("postgres://u:p@h/postgres?connect_timeout=5"),
            "postgres://u:p@h/sb_test_x?connect_timeout=5"
        );
        assert!(with_database("host=localhost user=u", "sb_test_x").is_err());
        assert!(with_database("mysql://u@h/db", "sb_test_x").is_err());
    }

    #[test]
    fn messages_never_carry_the_password() {
        assert_eq!(
            redact("postgres://u:s3cret@h:1/db?x=1"),
            "postgres://u:***@h:1/db?x=1"
        );
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        let error = with_database("mysql://u:s3cret@h/db", "x").expect_err("not postgres");
        assert!(!error.to_string().contains("s3cret"), "{error}");
    }

    #[test]
    fn without_the_variable_a_test_fails_and_says_what_to_run() {
        for value in [None, Some(String::new()), Some("  ".to_owned())] {
            let error = configured_server(value).expect_err("no server is configured");
            let message = error.to_string();
            assert!(message.contains("cargo xtask test"), "{message}");
            assert!(message.contains(URL_VARIABLE), "{message}");
        }
        assert_eq!(
            configured_server(Some("postgres://u@h/db".to_owned())).expect("a server"),
            "postgres://u@h/db"
        );
    }
}
