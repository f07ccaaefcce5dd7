//! `switchboard mounts FILE [--json]`: starts the servers a mounts file lists, shows how each
//! is doing (state, process id, restarts, tools, quarantined tools, what the prompt-injection
//! verifier found, last error), and closes them.
//!
//! A server that did not start is a row of its own, `failed`, with why: this is where a user
//! checks a mounts file before serving it.
//!
//! `switchboard mounts accept ID --mounts FILE [--yes]` starts server `ID` alone, prints how
//! its tools changed since they were accepted (a unified diff per changed tool), and, once
//! confirmed on the terminal (or with `--yes`), pins them as they are now in the lock file.

use std::{collections::BTreeMap, io::IsTerminal as _};

use owo_colors::Stream;
use serde::Serialize;
use switchboard_mounts::{Finding, MountState, MountStatus, MountsConfig};

use crate::{
    app::{Exit, UsageError},
    args::{MountsAcceptArgs, MountsArgs},
    escape::escape_controls,
    mounts_setup::MountsSetup,
    output::{self, Tone},
    table::{self, Cell},
};

/// One server, as `mounts --json` prints it.
#[derive(Debug, Serialize)]
struct Row<'a> {
    id: &'a str,
    state: &'a MountState,
    pid: Option<u32>,
    restarts: u64,
    tools: &'a [String],
    findings: &'a [Finding],
    /// Registered but withheld tools, by name, with why.
    quarantined: &'a BTreeMap<String, String>,
    last_error: Option<&'a str>,
}

/// Prints the servers' statuses; exits 1 when one of them is not up.
pub(super) async fn run(mounts: Option<&MountsSetup>, args: &MountsArgs) -> anyhow::Result<Exit> {
    let statuses = match mounts {
        Some(mounts) => mounts.statuses().await,
        None => Vec::new(),
    };
    if args.json {
        let rows: Vec<Row<'_>> = statuses
            .iter()
            .map(|status| Row {
                id: &status.id,
                state: &status.state,
                pid: status.pid,
                restarts: status.restarts,
                tools: &status.tools,
                findings: &status.findings,
                quarantined: &status.quarantined,
                last_error: status.last_error.as_deref(),
            })
            .collect();
        output::write_stdout(&output::to_json(&rows)?);
    } else {
        output::write_stdout(&render(&statuses));
    }
    let all_up = statuses.iter().all(|status| status.state == MountState::Up);
    Ok(if all_up { Exit::Success } else { Exit::Refused })
}

fn render(statuses: &[MountStatus]) -> String {
    let rows: Vec<Vec<Cell>> = statuses
        .iter()
        .map(|status| {
            let tone = if status.state == MountState::Up {
                Tone::Good
            } else {
                Tone::Bad
            };
            vec![
                Cell::toned(status.id.as_str(), Tone::Name),
                Cell::toned(status.state.to_string(), tone),
                Cell::plain(
                    status
                        .pid
                        .map_or_else(|| "-".to_owned(), |pid| pid.to_string()),
                ),
                Cell::plain(status.restarts.to_string()),
                Cell::plain(status.tools.len().to_string()),
                if status.quarantined.is_empty() {
                    Cell::plain("-")
                } else {
                    Cell::toned(
                        status
                            .quarantined
                            .keys()
                            .map(String::as_str)
                            .collect::<Vec<_>>()
                            .join(", "),
                        Tone::Bad,
                    )
                },
                Cell::plain(status.findings.len().to_string()),
                Cell::plain(status.last_error.as_deref().unwrap_or("-")),
            ]
        })
        .collect();
    let mut text = table::render(
        &[
            "ID",
            "STATE",
            "PID",
            "RESTARTS",
            "TOOLS",
            "QUARANTINED",
            "FINDINGS",
            "LAST ERROR",
        ],
        &rows,
        "",
        Stream::Stdout,
    );
    // Each finding on a line of its own under the table: rule, tool, field and excerpt.
    for status in statuses {
        for finding in &status.findings {
            text.push_str(&format!("{}: {finding}\n", status.id));
        }
    }
    text
}

/// Reviews server `args.id`'s changes and accepts them once confirmed; exits 1 when they are
/// not accepted (or the server could not be reviewed).
pub(crate) async fn accept(args: MountsAcceptArgs) -> anyhow::Result<Exit> {
    let config = MountsConfig::load(&args.mounts)
        .map_err(|error| UsageError::new(format!("{error} (given with --mounts)")))?;
    if !config.servers.iter().any(|server| server.id == args.id) {
        let ids: Vec<&str> = config
            .servers
            .iter()
            .map(|server| server.id.as_str())
            .collect();
        return Err(UsageError::new(format!(
            "the mounts file {} has no server `{}`; its servers are: {}",
            args.mounts.display(),
            args.id,
            ids.join(", ")
        ))
        .into());
    }
    let review = match switchboard_mounts::review(&config, &args.id).await {
        Ok(review) => review,
        Err(error) => {
            output::write_stderr(&format!("switchboard: {error}\n"));
            return Ok(Exit::Refused);
        }
    };
    let id = &args.id;
    let lock = review.lock_path().display().to_string();
    if review.changes().is_empty() {
        output::write_stdout(&format!(
            "mounted server `{id}`: nothing changed since its tools were accepted (pins in \
             {lock})\n"
        ));
        return Ok(Exit::Success);
    }
    let heading = if review.was_pinned() {
        format!(
            "mounted server `{id}`: its tools changed since they were accepted (pins in {lock}):\n"
        )
    } else {
        format!("mounted server `{id}` has no pins yet (in {lock}); it offers:\n")
    };
    // The diff quotes what the server sent: its control characters are shown, not obeyed.
    let diff: String = review
        .diff()
        .lines()
        .map(|line| format!("{}\n", escape_controls(line)))
        .collect();
    output::write_stdout(&format!("{heading}{diff}"));
    if !args.yes && !confirmed(id)? {
        output::write_stderr(
            "switchboard: not accepted; its changed tools stay quarantined (--yes accepts \
             without asking)\n",
        );
        return Ok(Exit::Refused);
    }
    review.accept()?;
    output::write_stdout(&format!(
        "accepted: the pins of `{id}` in {lock} are updated; a running `switchboard serve` \
         exposes its tools again at its next ping of the server\n"
    ));
    Ok(Exit::Success)
}

/// Whether the person at the terminal accepts the changes of server `id`; `false` without a
/// terminal to ask on.
fn confirmed(id: &str) -> anyhow::Result<bool> {
    if !std::io::stdin().is_terminal() {
        output::write_stderr("switchboard: standard input is not a terminal to ask on\n");
        return Ok(false);
    }
    output::write_stderr(&format!("Accept these changes of `{id}`? [y/N] "));
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "Yes" | "YES"))
}
