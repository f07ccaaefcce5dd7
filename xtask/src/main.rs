//! `cargo xtask`: the command-line entry point for the project's automation.
//!
//! Parses arguments with clap and calls into the library (`xtask::catalog`), which holds all
//! the logic so that tests can call it too.

// A command-line tool reports to its terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use xtask::{
    bench,
    catalog::{self, CatalogReport},
    ensure_file::{FileStatus, Mode},
    weight,
};

/// Project automation for Switchboard.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Regenerate the tool catalog, docs/reference/tools.md and docs/reference/tools.json,
    /// from the registry with every linked tool.
    Catalog {
        /// Write nothing; fail if either file differs from what would be generated.
        #[arg(long)]
        check: bool,
    },
    /// Run every test (nextest, then the doctests), installing Chromium and chromedriver,
    /// PostgreSQL, and the MCP servers the mounting tests mount, first when they are missing:
    /// the README's test command. It starts one throw-away PostgreSQL cluster for the run, gives
    /// the tests its URL in SWITCHBOARD_TEST_POSTGRES_URL, and stops it at the end.
    Test {
        /// What CI wants: `--locked` for cargo and `--no-fail-fast` for nextest.
        #[arg(long)]
        ci: bool,
        /// Install what the tests need, and run none (for `cargo nextest run` by hand after;
        /// the PostgreSQL tests then need `cargo xtask postgres` running).
        #[arg(long, conflicts_with = "ci")]
        prepare: bool,
        /// Only the PostgreSQL tests: every test of a crate whose name ends in `-postgres`, and
        /// every test whose name contains `postgres` (the nextest filter
        /// `package(*-postgres) | test(postgres)`). Name a new PostgreSQL crate or test so.
        #[arg(long)]
        postgres: bool,
    },
    /// Start a throw-away PostgreSQL cluster (installing PostgreSQL first when it is missing)
    /// and print the `export SWITCHBOARD_TEST_POSTGRES_URL=...` line that lets `cargo nextest
    /// run` reach it; stop it and delete it on Ctrl-C.
    Postgres,
    /// Install the MCP servers pinned in xtask/mcp-servers (npm's SDK and servers, PyPI's
    /// fastmcp and mcp-server-time) under target/mcp-servers, unless they already are: what the
    /// mounting tests mount and the HTTP benchmark measures.
    McpServers,
    /// Run the headline benchmarks and print today's figures against today's targets.
    Bench {
        /// Shorter runs where a benchmark offers them.
        #[arg(long)]
        quick: bool,
        /// Run only these benchmarks (invoke, route, navigate, writer, roundtrip, http, html,
        /// mounted, workflow).
        names: Vec<String>,
    },
    /// Build the crate of docs/embed.md (as written, on default features, without default
    /// features) and a one-tool rmcp server, each cold, and print crates compiled, cold build
    /// time and binary size (docs/benchmarks.md, "Build weight"). Takes several minutes.
    Weight {
        /// Measure this Switchboard checkout instead (for instance a `git worktree` of another
        /// commit).
        #[arg(long)]
        checkout: Option<std::path::PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Catalog { check } => {
            let mode = if check { Mode::Check } else { Mode::Write };
            match catalog::run(mode) {
                Ok(report) => report_catalog(&report),
                Err(error) => {
                    eprintln!("error: {error:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Test {
            ci,
            prepare,
            postgres,
        } => report_error(xtask::test::run(&xtask::test::Options {
            ci,
            prepare,
            postgres,
        })),
        Command::Postgres => report_error(xtask::postgres::serve()),
        Command::McpServers => report_error(xtask::mcp_servers::ensure(&xtask::project_root())),
        Command::Bench { quick, names } => report_bench(&bench::Options { quick, only: names }),
        Command::Weight { checkout } => match weight::run(checkout.as_deref()) {
            Ok(weights) => {
                println!("\n{}", weight::render(&weights));
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("error: {error:#}");
                ExitCode::FAILURE
            }
        },
    }
}

fn report_error(result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn report_bench(options: &bench::Options) -> ExitCode {
    match bench::run(options) {
        Ok(rows) => {
            println!("\n{}", bench::render(&rows));
            if rows
                .iter()
                .any(|row| row.verdict == bench::Verdict::NotMeasured)
            {
                eprintln!("error: a benchmark printed no figure for a headline row");
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn report_catalog(report: &CatalogReport) -> ExitCode {
    for (path, status) in &report.files {
        match status {
            FileStatus::UpToDate => println!("{path}: up to date"),
            FileStatus::Updated => println!("{path}: written"),
            FileStatus::Stale(message) => eprintln!("error: {message}"),
        }
    }
    if report.stale_messages().is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
