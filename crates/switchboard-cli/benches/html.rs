//! The HTML page over loopback, as a load generator sees it: `wrk` against the real
//! `switchboard serve --http` binary, the roster week as HTML beside the same page as
//! markdown.
//!
//! The binary runs as a signed-in person would use it (`--org acme --user sam --role staff`),
//! so every request loads the page through the registry, decides its actions and renders it.
//! Before measuring, both representations must answer 200 with their content type. Then each
//! round runs `wrk` with 1 thread and 1 connection for a few seconds on each, HTML first in odd
//! rounds and markdown first in even ones, so that the machine's noise hits both alike, and
//! reads the 50% and 99% latencies of `wrk --latency`. The report gives every round and the
//! medians over the rounds, and ends with a `BENCH` line for `cargo xtask bench`: the HTML
//! median against the markdown median (the baseline: the same page, loaded and decided alike,
//! without the HTML rendering and sanitising).
//!
//! `wrk` is Debian's `wrk` package: `cargo xtask bench html` installs it when it is missing.
//! Run: `cargo bench -p switchboard-cli --bench html` (about 40 seconds), or `-- quick` (or
//! `HTML_BENCH_QUICK=1`) for one short round.

#![allow(clippy::print_stdout, reason = "a benchmark's output is its report")]
#![allow(missing_docs, reason = "a benchmark binary has no public API")]

#[path = "shared/quick.rs"]
mod quick;
#[path = "shared/switchboard.rs"]
mod switchboard;

use std::{net::SocketAddr, time::Duration};

use anyhow::{Context as _, bail, ensure};
use http_body_util::{BodyExt as _, Empty};
use hyper::{
    Request, StatusCode,
    body::Bytes,
    header::{ACCEPT, CONTENT_TYPE, HOST},
};
use hyper_util::rt::TokioIo;
use tokio::{net::TcpStream, process::Command};

use switchboard::{Identity, Switchboard};

/// The page measured: the seeded roster week, with its shifts and their actions.
const PAGE: &str = "/roster/weeks/2026-11-23";

/// How long the page's check may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(10);

/// A representation of the page.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Representation {
    Html,
    Markdown,
}

impl Representation {
    fn accept(self) -> &'static str {
        match self {
            Representation::Html => "text/html",
            Representation::Markdown => "text/markdown",
        }
    }
}

/// How long the run is: the full run, or `quick` (argument) / `HTML_BENCH_QUICK=1`.
#[derive(Clone, Copy, Debug)]
struct Settings {
    rounds: usize,
    warm_up: Duration,
    duration: Duration,
}

impl Settings {
    fn from_environment() -> Self {
        if quick::asked_for_quick("HTML_BENCH_QUICK") {
            Settings {
                rounds: 1,
                warm_up: Duration::from_secs(1),
                duration: Duration::from_secs(1),
            }
        } else {
            Settings {
                rounds: 5,
                warm_up: Duration::from_secs(1),
                duration: Duration::from_secs(3),
            }
        }
    }
}

/// What one `wrk` run measured.
#[derive(Clone, Copy, Debug)]
struct WrkRun {
    median: Duration,
    p99: Duration,
    requests_per_second: f64,
}

fn main() -> anyhow::Result<()> {
    let settings = Settings::from_environment();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("a Tokio runtime")?
        .block_on(run(settings))
}

async fn run(settings: Settings) -> anyhow::Result<()> {
    let mut switchboard = Switchboard::start(Identity {
        org: "acme",
        user: "sam",
        role: "staff",
    })
    .await?;
    let measured = measure(settings, switchboard.addr).await;
    switchboard.stop().await;
    let (html, markdown) = measured?;

    let html_median = median(html.iter().map(|run| run.median));
    let markdown_median = median(markdown.iter().map(|run| run.median));
    let html_p99 = median(html.iter().map(|run| run.p99));
    let markdown_p99 = median(markdown.iter().map(|run| run.p99));
    println!(
        "\nmedians over the rounds: HTML {} (p99 {}), markdown {} (p99 {}), {:.2}× (target: HTML under 1 ms median)",
        milliseconds(html_median),
        milliseconds(html_p99),
        milliseconds(markdown_median),
        milliseconds(markdown_p99),
        html_median.as_secs_f64() / markdown_median.as_secs_f64(),
    );
    let figure = serde_json::json!({
        "id": "html.week",
        "median": html_median.as_nanos() as f64,
        "baseline": markdown_median.as_nanos() as f64,
        "unit": "ns",
    });
    println!("BENCH {figure}");
    Ok(())
}

/// Checks both representations, warms up, then runs the rounds: every HTML run and every
/// markdown run.
async fn measure(
    settings: Settings,
    addr: SocketAddr,
) -> anyhow::Result<(Vec<WrkRun>, Vec<WrkRun>)> {
    check(addr, Representation::Html).await?;
    check(addr, Representation::Markdown).await?;
    println!(
        "GET {PAGE} with wrk (1 thread, 1 connection), as HTML and as markdown: a warm-up of \
         {:?} each, then rounds of {:?} each (rounds: {})",
        settings.warm_up, settings.duration, settings.rounds
    );
    for representation in [Representation::Html, Representation::Markdown] {
        wrk(addr, representation, settings.warm_up).await?;
    }
    let mut html = Vec::new();
    let mut markdown = Vec::new();
    for round in 1..=settings.rounds {
        let order = if round % 2 == 1 {
            [Representation::Html, Representation::Markdown]
        } else {
            [Representation::Markdown, Representation::Html]
        };
        for representation in order {
            let measured = wrk(addr, representation, settings.duration).await?;
            match representation {
                Representation::Html => html.push(measured),
                Representation::Markdown => markdown.push(measured),
            }
        }
        let (html_run, markdown_run) = (html[round - 1], markdown[round - 1]);
        println!(
            "round {round}/{}: HTML {} (p99 {}, {:.0} req/s), markdown {} (p99 {}, {:.0} req/s)",
            settings.rounds,
            milliseconds(html_run.median),
            milliseconds(html_run.p99),
            html_run.requests_per_second,
            milliseconds(markdown_run.median),
            milliseconds(markdown_run.p99),
            markdown_run.requests_per_second,
        );
    }
    Ok((html, markdown))
}

/// Fails unless the page answers 200 in `representation`'s content type.
async fn check(addr: SocketAddr, representation: Representation) -> anyhow::Result<()> {
    let what = format!("GET {PAGE} with Accept: {}", representation.accept());
    let answer = tokio::time::timeout(CHECK_TIMEOUT, get(addr, representation.accept()))
        .await
        .with_context(|| format!("{what}: no answer within {CHECK_TIMEOUT:?}"))?
        .with_context(|| what.clone())?;
    let (status, content_type, body) = answer;
    ensure!(
        status == StatusCode::OK,
        "{what}: {status}, not 200: {}",
        String::from_utf8_lossy(&body)
    );
    ensure!(
        content_type.starts_with(representation.accept()),
        "{what}: answered {content_type}"
    );
    Ok(())
}

/// One GET of the page on a fresh connection: its status, content type and body.
async fn get(addr: SocketAddr, accept: &str) -> anyhow::Result<(StatusCode, String, Bytes)> {
    let stream = TcpStream::connect(addr).await?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .context("the HTTP/1.1 handshake")?;
    // Drives the connection until the sender is dropped.
    tokio::spawn(connection);
    let request = Request::get(PAGE)
        .header(HOST, addr.to_string())
        .header(ACCEPT, accept)
        .body(Empty::<Bytes>::new())?;
    let response = sender.send_request(request).await?;
    let (parts, body) = response.into_parts();
    let content_type = parts
        .headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = body.collect().await?.to_bytes();
    Ok((parts.status, content_type, body))
}

/// Runs `wrk` on the page for `duration` and reads its latency distribution.
async fn wrk(
    addr: SocketAddr,
    representation: Representation,
    duration: Duration,
) -> anyhow::Result<WrkRun> {
    let url = format!("http://{addr}{PAGE}");
    let output = Command::new("wrk")
        .args(["-t1", "-c1", "--latency"])
        .arg(format!("-d{}s", duration.as_secs().max(1)))
        .arg("-H")
        .arg(format!("Accept: {}", representation.accept()))
        .arg(&url)
        .kill_on_drop(true)
        .output()
        .await
        .context(
            "cannot run `wrk`: `cargo xtask bench html` installs it, or run \
             `sudo apt-get install wrk`",
        )?;
    let report = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        bail!(
            "`wrk {url}` failed ({}): {}{}",
            output.status,
            report,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    parse_wrk(&report).with_context(|| format!("reading the report of `wrk {url}`:\n{report}"))
}

/// The 50% and 99% latencies and the request rate from `wrk --latency`'s report; an error for
/// a run with failed requests.
fn parse_wrk(report: &str) -> anyhow::Result<WrkRun> {
    let mut median = None;
    let mut p99 = None;
    let mut requests_per_second = None;
    for line in report.lines() {
        let mut words = line.split_whitespace();
        match (words.next(), words.next()) {
            (Some("50%"), Some(latency)) => median = Some(wrk_duration(latency)?),
            (Some("99%"), Some(latency)) => p99 = Some(wrk_duration(latency)?),
            (Some("Requests/sec:"), Some(rate)) => {
                requests_per_second = Some(rate.parse().context("the request rate")?);
            }
            (Some("Non-2xx"), _) | (Some("Socket"), Some("errors:")) => {
                bail!("some requests failed: {}", line.trim());
            }
            _ => {}
        }
    }
    Ok(WrkRun {
        median: median.context("no 50% latency")?,
        p99: p99.context("no 99% latency")?,
        requests_per_second: requests_per_second.context("no Requests/sec")?,
    })
}

/// A latency as `wrk` prints it: `517.00us`, `1.07ms`, `2.00s`, `1.00m`.
fn wrk_duration(text: &str) -> anyhow::Result<Duration> {
    let split = text
        .find(|character: char| character.is_ascii_alphabetic())
        .with_context(|| format!("no unit in {text:?}"))?;
    let (number, unit) = text.split_at(split);
    let number: f64 = number
        .parse()
        .with_context(|| format!("no number in {text:?}"))?;
    let seconds_per_unit = match unit {
        "us" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3_600.0,
        other => bail!("unknown unit {other:?} in {text:?}"),
    };
    Ok(Duration::from_secs_f64(number * seconds_per_unit))
}

/// The median of `durations` (the upper one of an even count).
fn median(durations: impl Iterator<Item = Duration>) -> Duration {
    let mut sorted: Vec<Duration> = durations.collect();
    sorted.sort();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

fn milliseconds(duration: Duration) -> String {
    format!("{:.3} ms", duration.as_secs_f64() * 1e3)
}
