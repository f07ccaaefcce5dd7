//! `switchboard audit` and `switchboard audit export`: read the records a persistent audit
//! store holds: by default the one `serve` keeps in the state directory (`--state-dir`,
//! `audit.db`), else the file `--audit sqlite:PATH` names.
//!
//! These commands read the store directly, without booting the runtime: they run beside a
//! `serve` that is writing to the same SQLite file (its readers never block the writer). A file
//! that does not exist yet is never created: nothing was ever recorded there, and the command
//! says so ([`Source::NotYet`]). The in-memory store is refused with a usage error, since a new
//! process would only ever find it empty.

use std::{fs::File, io::BufWriter, path::PathBuf, str::FromStr, sync::Arc};

use anyhow::Context as _;
use clap::{Args, Subcommand};
use jiff::Timestamp;
use switchboard::audit::Outcome;
use switchboard::{AuditQuery, AuditStore};

use crate::{
    app::{Exit, UsageError},
    audit_setup::{AuditSetup, AuditStoreArgs, StoreChoice},
    escape::escape_controls,
    output, render,
    workflows_setup::StateDirArgs,
};

/// `switchboard audit [FILTERS] [--limit N] [--json]`, or `switchboard audit export`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct AuditArgs {
    /// Export instead of listing.
    #[command(subcommand)]
    pub(crate) action: Option<AuditAction>,

    /// Which records.
    #[command(flatten)]
    pub(crate) filters: AuditFilters,

    /// At most this many records (newest first).
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub(crate) limit: usize,

    /// Print a JSON array of records instead of a table.
    #[arg(long)]
    pub(crate) json: bool,

    /// Which store to read, and the config file.
    #[command(flatten)]
    pub(crate) store: AuditStoreArgs,

    /// Where `serve` keeps its records.
    #[command(flatten)]
    pub(crate) state: StateDirArgs,
}

/// What `audit` can do besides listing.
#[derive(Debug, Subcommand)]
pub(crate) enum AuditAction {
    /// Write every matching record as JSON lines (one record per line, newest first).
    Export(ExportArgs),
}

/// `switchboard audit export [FILTERS] [--out FILE]`.
#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// Which records.
    #[command(flatten)]
    pub(crate) filters: AuditFilters,

    /// Write to FILE instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub(crate) out: Option<PathBuf>,
}

/// The filters both forms share. Every filter given must match.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct AuditFilters {
    /// Only records of this correlation id.
    #[arg(long, value_name = "ID")]
    pub(crate) correlation: Option<String>,

    /// Only records of this tool.
    #[arg(long, value_name = "TOOL")]
    pub(crate) tool: Option<String>,

    /// Only records of this organisation.
    #[arg(long, value_name = "ORG")]
    pub(crate) org: Option<String>,

    /// Only records of this user.
    #[arg(long, value_name = "USER")]
    pub(crate) user: Option<String>,

    /// Only records with this outcome: `ok` or an error kind (`permission_denied`, …).
    #[arg(long, value_name = "OUTCOME")]
    pub(crate) outcome: Option<String>,

    /// Only records at or after this time: RFC 3339 (`2026-11-23T09:00:00Z`) or an age
    /// (`2h`, `7 days`: that long ago).
    #[arg(long, value_name = "TIME")]
    pub(crate) since: Option<String>,

    /// Only records before this time (same forms as --since).
    #[arg(long, value_name = "TIME")]
    pub(crate) until: Option<String>,
}

impl AuditFilters {
    fn query(&self) -> Result<AuditQuery, UsageError> {
        let outcome = self
            .outcome
            .as_deref()
            .map(|text| {
                Outcome::from_str(text)
                    .map_err(|error| UsageError::new(format!("--outcome `{text}`: {error}")))
            })
            .transpose()?;
        Ok(AuditQuery {
            correlation_id: self.correlation.as_deref().map(Into::into),
            tool: self.tool.clone(),
            org_id: self.org.as_deref().map(Into::into),
            user_id: self.user.as_deref().map(Into::into),
            outcome,
            since: self
                .since
                .as_deref()
                .map(|text| parse_time("--since", text))
                .transpose()?,
            until: self
                .until
                .as_deref()
                .map(|text| parse_time("--until", text))
                .transpose()?,
            ..AuditQuery::default()
        })
    }
}

/// An instant: RFC 3339, or an age meaning that long before now.
fn parse_time(flag: &str, text: &str) -> Result<Timestamp, UsageError> {
    if let Ok(timestamp) = text.parse::<Timestamp>() {
        return Ok(timestamp);
    }
    let age: jiff::Span = text.parse().map_err(|_| {
        UsageError::new(format!(
            "{flag} `{text}` is neither an RFC 3339 time (2026-11-23T09:00:00Z) nor an age (2h, 7 days)"
        ))
    })?;
    let age = age
        .to_duration(jiff::SpanRelativeTo::days_are_24_hours())
        .map_err(|error| UsageError::new(format!("{flag} `{text}`: {error}")))?;
    Timestamp::now()
        .checked_sub(age)
        .map_err(|error| UsageError::new(format!("{flag} `{text}`: {error}")))
}

/// What `audit` reads.
pub(crate) enum Source {
    /// An open store.
    Store(Arc<dyn AuditStore>),
    /// A store file that does not exist yet: no record was ever kept there.
    NotYet(PathBuf),
}

/// Checks the arguments and opens the store, before anything is read.
pub(crate) fn prepare(
    args: AuditArgs,
    setup: &AuditSetup,
) -> Result<(AuditArgs, Source), UsageError> {
    // Check the filters first, so a typo is a usage error before the store is looked for.
    let filters = match &args.action {
        None => &args.filters,
        Some(AuditAction::Export(export)) => &export.filters,
    };
    let _checked = filters.query()?;
    match &setup.store {
        StoreChoice::Memory => Err(UsageError::new(
            "`switchboard audit` reads a persistent store, and the in-memory one starts empty in \
             every process: leave out `--audit memory` (SWITCHBOARD_AUDIT, the config file's \
             [audit] store) to read the state directory's audit.db, where `serve` keeps its \
             records, or pass --audit sqlite:PATH",
        )),
        StoreChoice::Sqlite(path) if !path.exists() => Ok((args, Source::NotYet(path.clone()))),
        StoreChoice::Sqlite(_) | StoreChoice::Postgres(_) => {
            Ok((args, Source::Store(setup.open()?)))
        }
    }
}

/// The sentence saying that no record is kept in `path` yet, and where to look instead.
fn nothing_kept_yet(path: &std::path::Path) -> String {
    format!(
        "no audit records: nothing is kept in {} yet (`serve` keeps its records in its state \
         directory's audit.db: name the same --state-dir DIR, or --audit sqlite:PATH)\n",
        escape_controls(&path.display().to_string())
    )
}

/// Runs `audit` or `audit export` against what `prepare` found.
pub(crate) async fn run(args: AuditArgs, source: Source) -> anyhow::Result<Exit> {
    let store = match source {
        Source::Store(store) => store,
        Source::NotYet(path) => return run_on_nothing(args, &path),
    };
    match args.action {
        None => {
            let query = args.filters.query()?.limit(args.limit);
            let records = read(&store, query).await?;
            if args.json {
                output::write_stdout(&output::to_json(&records)?);
            } else {
                output::write_stdout(&render::audit_list(&records));
            }
        }
        Some(AuditAction::Export(export)) => {
            let query = export.filters.query()?;
            let written = match &export.out {
                None => export_to(&store, query, std::io::stdout().lock()).await?,
                Some(path) => {
                    let file = File::create(path)
                        .with_context(|| format!("cannot create {}", path.display()))?;
                    export_to(&store, query, BufWriter::new(file)).await?
                }
            };
            tracing::info!(records = written, "audit export finished");
        }
    }
    Ok(Exit::Success)
}

/// `audit` or `audit export` where no record was ever kept: an empty list (`[]` under
/// `--json`) or an empty export, and the reason on standard error when standard output is not
/// the place for it.
fn run_on_nothing(args: AuditArgs, path: &std::path::Path) -> anyhow::Result<Exit> {
    match args.action {
        None if args.json => output::write_stdout(&output::to_json(&serde_json::json!([]))?),
        None => output::write_stdout(&nothing_kept_yet(path)),
        Some(AuditAction::Export(export)) => {
            if let Some(out) = &export.out {
                File::create(out).with_context(|| format!("cannot create {}", out.display()))?;
            }
            output::write_stderr(&nothing_kept_yet(path));
        }
    }
    Ok(Exit::Success)
}

/// Records per page while exporting: bounded memory whatever the store holds.
const EXPORT_PAGE: usize = 1_000;

async fn export_to(
    store: &Arc<dyn AuditStore>,
    query: AuditQuery,
    mut out: impl std::io::Write,
) -> anyhow::Result<u64> {
    let mut written = 0;
    let mut page = query.limit(EXPORT_PAGE);
    loop {
        let records = read(store, page.clone()).await?;
        for record in &records {
            serde_json::to_writer(&mut out, record).context("cannot write the export")?;
            out.write_all(b"\n").context("cannot write the export")?;
        }
        written += records.len() as u64;
        match records.last() {
            Some(oldest) if records.len() == EXPORT_PAGE => page.before_id = Some(oldest.id),
            _ => break,
        }
    }
    out.flush().context("cannot write the export")?;
    Ok(written)
}

async fn read(
    store: &Arc<dyn AuditStore>,
    query: AuditQuery,
) -> anyhow::Result<Vec<switchboard::AuditRecord>> {
    let store = Arc::clone(store);
    tokio::task::spawn_blocking(move || store.query(&query))
        .await
        .context("the audit query task failed")?
        .context("the audit store could not answer")
}
