//! Stores in PostgreSQL: `--audit postgres://…` (and `--approvals`, `--workflows`), or one
//! `[store] url` in the config file for every store a fleet of nodes shares.
//!
//! `[store] url` takes the place of the state directory's SQLite files: what a command would
//! keep there (see [`crate::store_defaults`]) it keeps in that database instead; a store named
//! by its own flag or table still wins, and a command that keeps nothing keeps nothing. The
//! password comes from the URL, else `PGPASSWORD`, else the file `[store] password_file` names.
//! It is never shown: a URL is printed without it, and the stores' messages name the database
//! by its URL with the password left out.

use std::{fmt, path::PathBuf, str::FromStr};

use serde::Deserialize;
use switchboard_postgres::PostgresOptions;
pub(crate) use switchboard_postgres::without_password;

use crate::{app::UsageError, config_file::StoreChoice};

/// A PostgreSQL database URL, as a flag or the config file gives it, with the `[store]`
/// settings that go with it.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct PostgresUrl {
    url: String,
    password_file: Option<PathBuf>,
    pool_size: Option<usize>,
}

impl PostgresUrl {
    /// Whether `text` is meant as a PostgreSQL URL.
    pub(crate) fn is_one(text: &str) -> bool {
        text.starts_with("postgres://") || text.starts_with("postgresql://")
    }

    /// The options the stores open the database with.
    pub(crate) fn options(&self) -> PostgresOptions {
        let mut options = PostgresOptions::new(&self.url);
        if let Some(path) = &self.password_file {
            options = options.with_password_file(path);
        }
        if let Some(size) = self.pool_size {
            options = options.with_pool_size(size);
        }
        options
    }

    /// The same URL with the config file's `[store]` settings.
    fn with_settings(mut self, file: &StoreFile) -> Self {
        self.password_file = self.password_file.or_else(|| file.password_file.clone());
        self.pool_size = self.pool_size.or(file.pool_size);
        self
    }
}

/// Printed without the password, so that a printed command still works (the password comes
/// from `PGPASSWORD` or the password file).
impl fmt::Display for PostgresUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&without_password(&self.url))
    }
}

impl fmt::Debug for PostgresUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PostgresUrl")
            .field(&without_password(&self.url))
            .finish()
    }
}

impl FromStr for PostgresUrl {
    type Err = String;

    /// Takes any `postgres://` text: the URL is checked when its store opens, at startup,
    /// where the message leaves the password out. (A value refused here would be quoted
    /// whole in clap's error, password and all.)
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if !Self::is_one(text) {
            return Err(format!(
                "`{}` is not a PostgreSQL URL (postgres://USER@HOST/DATABASE)",
                without_password(text)
            ));
        }
        Ok(Self {
            url: text.to_owned(),
            password_file: None,
            pool_size: None,
        })
    }
}

impl<'de> Deserialize<'de> for PostgresUrl {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// The `[store]` table of the config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StoreFile {
    /// The database every store keeps its data in, unless its own flag or table names another.
    url: Option<PostgresUrl>,
    /// A file whose first line is the password, when the URL has none and `PGPASSWORD` is unset.
    password_file: Option<PathBuf>,
    /// Connections each store's pool keeps at most.
    pool_size: Option<usize>,
}

impl StoreFile {
    /// What a command keeps where it would otherwise use `default` (its state-directory
    /// default): `[store] url` in place of a SQLite file, the default otherwise.
    pub(crate) fn in_place_of(&self, default: Option<StoreChoice>) -> Option<StoreChoice> {
        match (default, &self.url) {
            (Some(StoreChoice::Sqlite(_)), Some(url)) => {
                Some(StoreChoice::Postgres(url.clone().with_settings(self)))
            }
            (default, _) => default,
        }
    }

    /// Whether `[store] url` names a database.
    pub(crate) fn names_database(&self) -> bool {
        self.url.is_some()
    }

    /// `choice` with the `[store]` password file and pool size when it is a PostgreSQL URL.
    pub(crate) fn settle(&self, choice: StoreChoice) -> StoreChoice {
        match choice {
            StoreChoice::Postgres(url) => StoreChoice::Postgres(url.with_settings(self)),
            other => other,
        }
    }
}

/// The usage error for a PostgreSQL store that cannot be opened: the store, and the reason
/// (which names the database without its password).
pub(crate) fn cannot_open(store: &str, error: &switchboard_postgres::OpenError) -> UsageError {
    UsageError::new(format!("the {store} store cannot be used: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_its_password() {
        let url: PostgresUrl = "postgres://app:s3cret@db.internal:5432/switchboard"
            .parse()
            .expect("a URL");
        assert_eq!(
            url.to_string(),
            "postgres://app@db.internal:5432/switchboard"
        );
        assert!(!format!("{url:?}").contains("s3cret"));
        assert_eq!(
            without_password("postgresql://app@db/x?sslmode=disable"),
            "postgresql://app@db/x?sslmode=disable"
        );
    }

    #[test]
    fn a_bad_url_is_refused_when_its_store_opens_without_its_password() {
        let url: PostgresUrl = "postgres://app:s3cret@db:notaport/x"
            .parse()
            .expect("checked when opened");
        let error = url.options().check().expect_err("a bad port").to_string();
        assert!(!error.contains("s3cret"), "{error}");
        assert!(
            error.contains("postgres://app:***@db:notaport/x"),
            "{error}"
        );
    }

    #[test]
    fn the_store_url_takes_the_place_of_sqlite_files_only() {
        let file: StoreFile = toml::from_str(
            "url = \"postgres://app@db/switchboard\"\npassword_file = \"/run/secrets/pg\"\n",
        )
        .expect("a [store] table");
        let sqlite = Some(StoreChoice::Sqlite("audit.db".into()));
        let Some(StoreChoice::Postgres(url)) = file.in_place_of(sqlite) else {
            panic!("the shared database replaces the SQLite default");
        };
        assert_eq!(url.to_string(), "postgres://app@db/switchboard");
        assert_eq!(url.password_file, Some(PathBuf::from("/run/secrets/pg")));
        assert_eq!(
            file.in_place_of(Some(StoreChoice::Memory)),
            Some(StoreChoice::Memory)
        );
        assert_eq!(file.in_place_of(None), None);
        let none = StoreFile::default();
        assert_eq!(
            none.in_place_of(Some(StoreChoice::Sqlite("a.db".into()))),
            Some(StoreChoice::Sqlite("a.db".into()))
        );
    }

    #[test]
    fn an_unknown_store_key_is_refused() {
        let error = toml::from_str::<StoreFile>("uri = \"postgres://a@b/c\"\n")
            .expect_err("unknown key")
            .to_string();
        assert!(error.contains("uri"), "{error}");
    }
}
