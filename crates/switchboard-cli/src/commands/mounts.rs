//! `switchboard mounts FILE [--json]`: starts the servers a mounts file lists, shows how each
//! is doing (state, process id, restarts, tools, what the prompt-injection verifier found, last
//! error), and closes them.
//!
//! A server that did not start is a row of its own, `failed`, with why: this is where a user
//! checks a mounts file before serving it.

use owo_colors::Stream;
use serde::Serialize;
use switchboard_mounts::{Finding, MountStatus};

use crate::{
    app::Exit,
    args::MountsArgs,
    mounts_setup::MountsSetup,
    output::{self, Tone},
    table::{self, Cell},
};

/// One server, as `mounts --json` prints it.
#[derive(Debug, Serialize)]
struct Row<'a> {
    id: &'a str,
    state: &'a str,
    pid: Option<u32>,
    restarts: u64,
    tools: &'a [String],
    findings: &'a [Finding],
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
                last_error: status.last_error.as_deref(),
            })
            .collect();
        output::write_stdout(&output::to_json(&rows)?);
    } else {
        output::write_stdout(&render(&statuses));
    }
    let all_up = statuses.iter().all(|status| status.state == "up");
    Ok(if all_up { Exit::Success } else { Exit::Refused })
}

fn render(statuses: &[MountStatus]) -> String {
    let rows: Vec<Vec<Cell>> = statuses
        .iter()
        .map(|status| {
            let tone = if status.state == "up" {
                Tone::Good
            } else {
                Tone::Bad
            };
            vec![
                Cell::toned(status.id.as_str(), Tone::Name),
                Cell::toned(status.state.as_str(), tone),
                Cell::plain(
                    status
                        .pid
                        .map_or_else(|| "-".to_owned(), |pid| pid.to_string()),
                ),
                Cell::plain(status.restarts.to_string()),
                Cell::plain(status.tools.len().to_string()),
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
