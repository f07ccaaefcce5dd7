//! The config file (`--config FILE` or `SWITCHBOARD_CONFIG`), read once at startup, and what
//! its tables and the flags share: where a store lives (`memory`, `sqlite:PATH` or
//! `postgres://…`) and ages such as `720h`.
//!
//! One TOML file, one table per concern: `[store]` (one PostgreSQL database for every store a
//! fleet shares, see [`crate::postgres_setup`]), `[audit]` (see [`crate::audit_setup`]),
//! `[approvals]` (see [`crate::approvals_setup`]), `[serve]` (see
//! `commands::serve`), `[limits]` (rate limits, see [`crate::limits_setup`]), `[telemetry]`
//! (OTLP export of the call spans, see [`crate::logging`]), and `[link]` with
//! `[[remote_domain]]` (domains on other nodes, see [`crate::link_setup`]). Unknown tables and keys are refused, so a
//! typo is a usage error naming the file and the key rather than a setting silently ignored.
//! Flags always win over the file, and so do the standard OpenTelemetry variables over
//! `[telemetry]`.

use std::{path::Path, path::PathBuf, str::FromStr, time::Duration};

use serde::Deserialize;

use crate::{
    app::UsageError,
    approvals_setup::ApprovalsFile,
    audit_setup::AuditFile,
    postgres_setup::{PostgresUrl, StoreFile},
};

/// Where a store keeps what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StoreChoice {
    /// In memory: gone when the process exits.
    Memory,
    /// A SQLite database file (created if missing).
    Sqlite(PathBuf),
    /// A PostgreSQL database, shared by every node that names it.
    Postgres(PostgresUrl),
}

impl StoreChoice {
    /// Whether what the store holds outlives the process.
    pub(crate) fn is_persistent(&self) -> bool {
        !matches!(self, StoreChoice::Memory)
    }
}

/// As a flag names it: `memory`, `sqlite:PATH` or the PostgreSQL URL without its password.
impl std::fmt::Display for StoreChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreChoice::Memory => f.write_str("memory"),
            StoreChoice::Sqlite(path) => write!(f, "sqlite:{}", path.display()),
            StoreChoice::Postgres(url) => url.fmt(f),
        }
    }
}

impl FromStr for StoreChoice {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text == "memory" {
            return Ok(StoreChoice::Memory);
        }
        if PostgresUrl::is_one(text) {
            return text.parse().map(StoreChoice::Postgres);
        }
        match text.strip_prefix("sqlite:") {
            Some("") => Err("`sqlite:` needs a file path, e.g. `sqlite:audit.db`".to_owned()),
            Some(path) => Ok(StoreChoice::Sqlite(PathBuf::from(path))),
            None => Err(format!(
                "unknown store `{}`: use `memory`, `sqlite:PATH` or \
                 `postgres://USER@HOST/DATABASE`",
                crate::postgres_setup::without_password(text)
            )),
        }
    }
}

impl<'de> Deserialize<'de> for StoreChoice {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// The config file's tables.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConfigFile {
    /// `[store]`.
    #[serde(default)]
    pub(crate) store: StoreFile,
    /// `[audit]`.
    #[serde(default)]
    pub(crate) audit: AuditFile,
    /// `[approvals]`.
    #[serde(default)]
    pub(crate) approvals: ApprovalsFile,
    /// `[serve]`.
    #[serde(default)]
    pub(crate) serve: ServeFile,
    /// `[limits]`: rate limits per organisation, per user and per tool.
    #[serde(default)]
    pub(crate) limits: switchboard_limits::Limits,
    /// `[telemetry]`: where the call spans are exported when the environment does not say.
    #[serde(default)]
    pub(crate) telemetry: crate::logging::TelemetryFile,
    /// `[link]`: this node's name, its signing keys and the peers it serves.
    #[serde(default)]
    pub(crate) link: crate::link_setup::LinkFile,
    /// `[[remote_domain]]`: the domains other nodes serve for this one.
    #[serde(default)]
    pub(crate) remote_domain: Vec<crate::link_setup::RemoteDomainFile>,
}

/// The `[serve]` table.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ServeFile {
    /// The file holding the requestState key in hex; `--state-key-file` and
    /// `SWITCHBOARD_STATE_KEY` win over it.
    pub(crate) state_key_file: Option<PathBuf>,
    /// The OAuth configuration of `serve --http` (`--oauth` wins over it; `--tokens` and it
    /// cannot both be given).
    pub(crate) oauth: Option<PathBuf>,
    /// `serve`'s workflow lease (`10s`); `--workflow-lease` wins over it.
    pub(crate) workflow_lease: Option<String>,
    /// How often `serve` sweeps for runs to take over (`3s`); `--workflow-sweep-every` wins
    /// over it.
    pub(crate) workflow_sweep_every: Option<String>,
    /// The tools `serve` disables at start, as selectors (`tag:beta`, `domain:billing`,
    /// `tool:x`); `--disable` adds to them and `--enable` turns them back on.
    #[serde(default)]
    pub(crate) disabled_tools: Vec<String>,
    /// Whether `serve` offers each linked tool's intent patterns as prompts (`intent_<tool>`,
    /// docs/mcp.md "Prompts"); off by default, and on whatever it says with
    /// `--intent-prompts`.
    #[serde(default)]
    pub(crate) intent_prompts: bool,
}

impl ConfigFile {
    /// Reads and parses the file at `path`; no path, no settings.
    pub(crate) fn load(path: Option<&Path>) -> Result<Self, UsageError> {
        let Some(path) = path else {
            return Ok(Self::default());
        };
        let text = std::fs::read_to_string(path).map_err(|error| {
            UsageError::new(format!(
                "cannot read the config file {} (given with --config or SWITCHBOARD_CONFIG): \
                 {error}",
                path.display()
            ))
        })?;
        toml::from_str(&text).map_err(|error| {
            UsageError::new(format!(
                "the config file {} is not valid: {error}",
                path.display()
            ))
        })
    }
}

/// An age such as `720h`, `90 days` or `P30D`.
pub(crate) fn parse_age(text: &str) -> Result<Duration, String> {
    let span: jiff::Span = text
        .trim()
        .parse()
        .map_err(|error| format!("`{text}` is not an age like `720h` or `90 days`: {error}"))?;
    let age = span
        .to_duration(jiff::SpanRelativeTo::days_are_24_hours())
        .map_err(|error| format!("`{text}` is not a fixed length of time: {error}"))?;
    Duration::try_from(age).map_err(|_| format!("`{text}` is negative"))
}

/// An age from the config file's `[table] key`, or the usage error naming both.
pub(crate) fn age_in_file(
    table: &str,
    key: &str,
    text: Option<&str>,
) -> Result<Option<Duration>, UsageError> {
    text.map(|text| {
        parse_age(text).map_err(|error| {
            UsageError::new(format!("`[{table}] {key}` in the config file: {error}"))
        })
    })
    .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_names_are_checked() {
        assert_eq!("memory".parse(), Ok(StoreChoice::Memory));
        for name in [
            "memory",
            "sqlite:a.db",
            "sqlite:/var/lib/switchboard/audit.db",
        ] {
            let choice: StoreChoice = name.parse().expect("a store name");
            assert_eq!(choice.to_string(), name, "printed as a flag names it");
        }
        assert_eq!(
            "sqlite:a.db".parse(),
            Ok(StoreChoice::Sqlite(PathBuf::from("a.db")))
        );
        assert!(
            "sqlite:"
                .parse::<StoreChoice>()
                .expect_err("no path")
                .contains("needs a file path")
        );
        let unknown = "mysql://app:s3cret@db/x"
            .parse::<StoreChoice>()
            .expect_err("unknown");
        assert!(
            unknown.contains("use `memory`, `sqlite:PATH` or"),
            "{unknown}"
        );
        assert!(!unknown.contains("s3cret"), "{unknown}");
        let postgres: StoreChoice = "postgres://app:s3cret@db:5432/switchboard"
            .parse()
            .expect("a PostgreSQL URL");
        assert!(postgres.is_persistent());
        assert_eq!(postgres.to_string(), "postgres://app@db:5432/switchboard");
    }

    #[test]
    fn ages_parse_in_friendly_and_iso_forms() {
        assert_eq!(parse_age("720h"), Ok(Duration::from_secs(720 * 3600)));
        assert_eq!(parse_age("90 days"), Ok(Duration::from_secs(90 * 86_400)));
        assert_eq!(parse_age("P1D"), Ok(Duration::from_secs(86_400)));
        assert!(parse_age("soon").is_err());
    }

    #[test]
    fn an_unknown_table_is_a_usage_error_naming_the_file() {
        let dir =
            std::env::temp_dir().join(format!("switchboard-cfg-table-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("config.toml");
        std::fs::write(&path, "[aproval]\nstore = \"memory\"\n").expect("write config");
        let error = ConfigFile::load(Some(&path)).expect_err("unknown table");
        assert!(error.to_string().contains("config.toml"), "{error}");
        assert!(error.to_string().contains("aproval"), "{error}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
