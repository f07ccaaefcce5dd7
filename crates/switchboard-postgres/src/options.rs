//! Where a store's database is and how to reach it: the URL, where its password comes from,
//! and the limits that keep a slow or absent server from hanging a call.
//!
//! The password is a secret an operator may keep out of the URL (and so out of shell
//! histories and process lists): it comes from the URL, else from `PGPASSWORD`, else from a
//! file the configuration names. It is never printed: every message names the database by
//! [`Target`], the URL with the password left out.

use std::{fmt, path::PathBuf, str::FromStr, time::Duration};

use tokio_postgres::config::Host;

use crate::error::OpenError;

/// How a store connects. Build it with [`PostgresOptions::new`] and the `with_` methods.
#[derive(Clone)]
pub struct PostgresOptions {
    url: String,
    password_file: Option<PathBuf>,
    /// Connections the store's pool keeps at most.
    pub pool_size: usize,
    /// How long opening one connection may take (TCP, authentication).
    pub connect_timeout: Duration,
    /// How long one call into the store may take, waiting for a pooled connection included;
    /// past it the call fails with [`QueryError::Timeout`](crate::QueryError::Timeout). The
    /// server is told the same limit as its `statement_timeout`.
    pub call_timeout: Duration,
    /// The `application_name` the server shows for the connections (`pg_stat_activity`).
    pub application_name: String,
}

impl fmt::Debug for PostgresOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresOptions")
            .field("url", &redact(&self.url))
            .field("password_file", &self.password_file)
            .field("pool_size", &self.pool_size)
            .field("connect_timeout", &self.connect_timeout)
            .field("call_timeout", &self.call_timeout)
            .field("application_name", &self.application_name)
            .finish()
    }
}

impl PostgresOptions {
    /// Options for the database at `url` (`postgres://user[:password]@host[:port]/database`),
    /// with the defaults: a pool of 16 connections, 5 s to connect, 10 s a call.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            password_file: None,
            pool_size: 16,
            connect_timeout: Duration::from_secs(5),
            call_timeout: Duration::from_secs(10),
            application_name: "switchboard".to_owned(),
        }
    }

    /// Reads the password from this file (its first line) when the URL has none and
    /// `PGPASSWORD` is unset.
    #[must_use]
    pub fn with_password_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.password_file = Some(path.into());
        self
    }

    /// Sets [`PostgresOptions::pool_size`].
    #[must_use]
    pub fn with_pool_size(mut self, size: usize) -> Self {
        self.pool_size = size.max(1);
        self
    }

    /// Sets [`PostgresOptions::call_timeout`].
    #[must_use]
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// Sets [`PostgresOptions::connect_timeout`].
    #[must_use]
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets [`PostgresOptions::application_name`] (a node's name, so an operator can tell the
    /// nodes' connections apart).
    #[must_use]
    pub fn with_application_name(mut self, name: impl Into<String>) -> Self {
        self.application_name = name.into();
        self
    }

    /// The database, as messages name it.
    pub fn target(&self) -> Target {
        Target(redact(&self.url))
    }

    /// Checks the URL (scheme, user, database, port) without connecting, so that a typo is
    /// refused before anything starts.
    pub fn check(&self) -> Result<(), OpenError> {
        self.client_config_with(None).map(drop)
    }

    /// The URL as given, only to scrub its password out of messages that might quote it.
    pub(crate) fn url_for_scrubbing(&self) -> &str {
        &self.url
    }

    /// The URL parsed, with the password filled in from its sources and the timeouts set.
    pub(crate) fn client_config(&self) -> Result<tokio_postgres::Config, OpenError> {
        self.client_config_with(std::env::var_os("PGPASSWORD"))
    }

    /// [`PostgresOptions::client_config`] with `PGPASSWORD`'s value given.
    fn client_config_with(
        &self,
        pgpassword: Option<std::ffi::OsString>,
    ) -> Result<tokio_postgres::Config, OpenError> {
        let target = self.target();
        if !(self.url.starts_with("postgres://") || self.url.starts_with("postgresql://")) {
            return Err(OpenError::InvalidUrl {
                target,
                reason: "it must start with postgres:// or postgresql://".to_owned(),
            });
        }
        let mut config =
            tokio_postgres::Config::from_str(&self.url).map_err(|error| OpenError::InvalidUrl {
                target: target.clone(),
                reason: scrub(&error.to_string(), &self.url),
            })?;
        if config.get_user().is_none() {
            return Err(OpenError::InvalidUrl {
                target,
                reason: "it names no user (postgres://USER@HOST/DATABASE)".to_owned(),
            });
        }
        if config.get_dbname().is_none() {
            return Err(OpenError::InvalidUrl {
                target,
                reason: "it names no database (postgres://USER@HOST/DATABASE)".to_owned(),
            });
        }
        if config.get_hosts().is_empty() {
            config.host("localhost");
        }
        if config.get_password().is_none() {
            if let Some(password) = pgpassword {
                config.password(password.as_encoded_bytes());
            } else if let Some(path) = &self.password_file {
                let text =
                    std::fs::read_to_string(path).map_err(|source| OpenError::PasswordFile {
                        target: target.clone(),
                        path: path.clone(),
                        source,
                    })?;
                config.password(text.lines().next().unwrap_or_default().as_bytes());
            }
        }
        config
            .connect_timeout(self.connect_timeout)
            .application_name(&self.application_name)
            .options(format!(
                "-c statement_timeout={}",
                self.call_timeout.as_millis()
            ));
        Ok(config)
    }
}

/// A database as messages name it: its URL without the password.
#[derive(Clone, PartialEq, Eq)]
pub struct Target(String);

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

/// `url` split around its `user[:password]@` part: the scheme, the user, the password if any,
/// and the rest from the hosts on. The last `@` of the authority ends the credentials, so a
/// password may hold one.
fn credentials(url: &str) -> Option<(&str, &str, Option<&str>, &str)> {
    let (scheme, rest) = url.split_once("://")?;
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (credentials, _) = rest[..authority_end].rsplit_once('@')?;
    let hosts = &rest[credentials.len() + 1..];
    Some(match credentials.split_once(':') {
        Some((user, password)) => (scheme, user, Some(password), hosts),
        None => (scheme, credentials, None, hosts),
    })
}

/// `url` with its password shown as `***` (`postgres://user:***@host/db`), for messages: the
/// URL unchanged when it has none.
pub(crate) fn redact(url: &str) -> String {
    match credentials(url) {
        Some((scheme, user, Some(_), hosts)) => format!("{scheme}://{user}:***@{hosts}"),
        _ => url.to_owned(),
    }
}

/// `url` with its password left out (`postgres://user@host/db`), for a URL that is printed to
/// be used again (the password then comes from `PGPASSWORD` or a password file).
pub fn without_password(url: &str) -> String {
    match credentials(url) {
        Some((scheme, user, Some(_), hosts)) => format!("{scheme}://{user}@{hosts}"),
        _ => url.to_owned(),
    }
}

/// `text` with every occurrence of the URL's password replaced by `***`: for messages that
/// come from elsewhere (the client library, the server) and might quote it.
pub(crate) fn scrub(text: &str, url: &str) -> String {
    match credentials(url) {
        Some((_, _, Some(password), _)) if !password.is_empty() => text.replace(password, "***"),
        _ => text.to_owned(),
    }
}

/// The first host of a config, for messages about an unreachable server.
pub(crate) fn first_host(config: &tokio_postgres::Config) -> String {
    let port = config.get_ports().first().copied().unwrap_or(5432);
    match config.get_hosts().first() {
        Some(Host::Tcp(host)) => format!("{host}:{port}"),
        Some(Host::Unix(path)) => format!("{}:{port}", path.display()),
        None => format!("localhost:{port}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_is_left_out_of_what_is_shown() {
        assert_eq!(
            redact("postgres://app:s3cret@db.internal:5432/switchboard"),
            "postgres://app:***@db.internal:5432/switchboard"
        );
        assert_eq!(
            redact("postgres://app@db/switchboard?sslmode=disable"),
            "postgres://app@db/switchboard?sslmode=disable"
        );
        assert_eq!(redact("not a url"), "not a url");
        assert_eq!(
            without_password("postgres://app:s3cret@db:5432/x?sslmode=disable"),
            "postgres://app@db:5432/x?sslmode=disable"
        );
        assert_eq!(
            without_password("postgres://app@db/x"),
            "postgres://app@db/x"
        );
        // An `@` in the password: the last one ends the credentials.
        assert_eq!(
            redact("postgres://app:p@ss@db/x"),
            "postgres://app:***@db/x"
        );
        let options = PostgresOptions::new("postgres://app:s3cret@db/x");
        assert!(!format!("{options:?}").contains("s3cret"));
        assert!(!options.target().to_string().contains("s3cret"));
    }

    #[test]
    fn a_message_quoting_the_password_is_scrubbed() {
        let url = "postgres://app:s3cret@db/x";
        assert_eq!(scrub("failed for s3cret here", url), "failed for *** here");
        assert_eq!(scrub("nothing", "postgres://app@db/x"), "nothing");
    }

    #[test]
    fn a_url_that_is_not_postgres_or_lacks_a_part_is_refused_without_its_password() {
        for (url, says) in [
            ("mysql://app:s3cret@db/x", "postgres://"),
            ("postgres://db.internal:5432", "no user"),
            ("postgres://app:s3cret@db.internal:notaport/x", "invalid"),
        ] {
            let error = PostgresOptions::new(url)
                .client_config_with(None)
                .expect_err(url)
                .to_string();
            assert!(error.contains(says), "{url}: {error}");
            assert!(!error.contains("s3cret"), "{url}: {error}");
        }
    }

    #[test]
    fn the_password_comes_from_a_file_when_the_url_has_none() {
        let dir = std::env::temp_dir().join(format!("sb-pg-pw-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let file = dir.join("password");
        std::fs::write(&file, "from-file\nignored\n").expect("write");
        let options = PostgresOptions::new("postgres://app@db/x").with_password_file(&file);
        let config = options.client_config_with(None).expect("config");
        assert_eq!(config.get_password(), Some(&b"from-file"[..]));
        // PGPASSWORD comes before the file, and the URL before both.
        let config = options
            .client_config_with(Some("from-env".into()))
            .expect("config");
        assert_eq!(config.get_password(), Some(&b"from-env"[..]));
        let config = PostgresOptions::new("postgres://app:in-url@db/x")
            .with_password_file(&file)
            .client_config_with(Some("from-env".into()))
            .expect("config");
        assert_eq!(config.get_password(), Some(&b"in-url"[..]));
        let error = PostgresOptions::new("postgres://app@db/x")
            .with_password_file(dir.join("absent"))
            .client_config_with(None)
            .expect_err("absent file")
            .to_string();
        assert!(error.contains("absent"), "{error}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
