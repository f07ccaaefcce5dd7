//! The interleaved summary: every variant, round by round, then the figures and the verdicts.
//!
//! Each round runs every variant once, in an order that rotates by one each round and runs
//! backwards every other round, so no variant always follows the same one (the audit writer
//! of a registry variant keeps napping for a while after its last call). Per variant and round:
//! single-client calls, each timed (latency median and p99, calls per second), with the CPU
//! time all threads of the processes involved spent meanwhile (this process, plus the server's
//! child process on stdio, from `/proc/<pid>/task/*/schedstat`; so client, server, runtime and
//! audit writer); then the same number of calls per client from `CLIENTS` concurrent clients
//! where the transport has more than one.
//!
//! CPU per call is the steadiest figure on a shared machine: other processes' load stretches
//! wall-clock latency but not the CPU time our processes spend. For the same reason, next to
//! the ratio of the pooled medians, each transport's ratio is also given round by round (our
//! median over the plain server's in the same round, measured one after the other) and its
//! median over the rounds: load that comes and goes between rounds then cancels out.

use std::sync::Arc;

use tokio::runtime::Runtime;

use crate::{CLIENTS, Variant, contended, setup::Fixture};

/// The most our layer may add to the plain rmcp round trip: 10%.
const TARGET_RATIO: f64 = 1.10;

/// The transports compared, as (name, ours, plain).
const PAIRS: [(&str, Variant, Variant); 4] = [
    ("duplex", Variant::OursDuplex, Variant::PlainDuplex),
    ("stdio", Variant::OursStdio, Variant::PlainStdio),
    ("HTTP", Variant::OursHttp, Variant::PlainHttp),
    (
        "HTTP 2026-07-28",
        Variant::OursHttpStateless,
        Variant::PlainHttpStateless,
    ),
];

/// The headline figures `cargo xtask bench` collects, as (id, ours, plain): the single-client
/// median round trip over each transport the target is stated for.
const HEADLINES: [(&str, Variant, Variant); 3] = [
    ("mcp.stdio", Variant::OursStdio, Variant::PlainStdio),
    ("mcp.http", Variant::OursHttp, Variant::PlainHttp),
    (
        "mcp.http_2026_07_28",
        Variant::OursHttpStateless,
        Variant::PlainHttpStateless,
    ),
];

/// Interleaved rounds.
const ROUNDS: usize = 20;

/// Calls per client in a contended MCP run.
const CALLS_PER_CLIENT: u64 = 100;

/// The `p` quantile of sorted `values` (NaN when there are none).
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let index = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[index]
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    percentile(values, 0.5)
}

/// CPU time (ns) every live thread of process `pid` (`None`: this one) has used so far; `None`
/// without `/proc`.
fn cpu_ns(pid: Option<u32>) -> Option<u64> {
    let tasks = match pid {
        Some(pid) => format!("/proc/{pid}/task"),
        None => "/proc/self/task".to_owned(),
    };
    let mut total = 0;
    for entry in std::fs::read_dir(tasks).ok()?.flatten() {
        let Ok(text) = std::fs::read_to_string(entry.path().join("schedstat")) else {
            continue;
        };
        total += text
            .split_whitespace()
            .next()
            .and_then(|ns| ns.parse::<u64>().ok())?;
    }
    Some(total)
}

/// CPU time (ns) and times scheduled in, per thread name, of every live thread of process
/// `pid` (`None`: this one), from `/proc/<pid>/task/<tid>/{comm,schedstat}`.
pub(crate) fn cpu_by_thread(pid: Option<u32>) -> std::collections::BTreeMap<String, (u64, u64)> {
    let tasks = match pid {
        Some(pid) => format!("/proc/{pid}/task"),
        None => "/proc/self/task".to_owned(),
    };
    let mut threads = std::collections::BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(tasks) else {
        return threads;
    };
    for entry in entries.flatten() {
        let name = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        let Ok(stat) = std::fs::read_to_string(entry.path().join("schedstat")) else {
            continue;
        };
        let mut fields = stat
            .split_whitespace()
            .map(|field| field.parse::<u64>().unwrap_or(0));
        let (on_cpu, _, slices) = (
            fields.next().unwrap_or(0),
            fields.next(),
            fields.next().unwrap_or(0),
        );
        let slot: &mut (u64, u64) = threads.entry(name.trim().to_owned()).or_default();
        slot.0 += on_cpu;
        slot.1 += slices;
    }
    threads
}

/// CPU time of this process plus the variant's server process, if it has its own.
fn variant_cpu_ns(variant: Variant, fixture: &Fixture) -> Option<u64> {
    let own = cpu_ns(None)?;
    match variant.child_pid(fixture) {
        Some(pid) => Some(own + cpu_ns(Some(pid))?),
        None => Some(own),
    }
}

/// What the summary measured for one variant.
#[derive(Default)]
struct Measured {
    /// One client: every call's latency (ns), each round's calls per second and CPU ns per call.
    single: Vec<f64>,
    single_rates: Vec<f64>,
    single_cpu: Vec<f64>,
    /// Each round's single-client median latency (ns), in round order.
    round_medians: Vec<f64>,
    /// `clients()` clients: every call's latency (ns) and each round's calls per second.
    many: Vec<f64>,
    many_rates: Vec<f64>,
}

/// The figures printed for one variant.
struct Summary {
    median_ns: f64,
    p99_ns: f64,
    cpu_ns: f64,
    rate_1: f64,
    many_median_ns: f64,
    many_p99_ns: f64,
    rate_many: f64,
    round_medians: Vec<f64>,
}

impl Measured {
    fn summarise(mut self) -> Summary {
        self.single.sort_by(f64::total_cmp);
        self.many.sort_by(f64::total_cmp);
        Summary {
            median_ns: percentile(&self.single, 0.5),
            p99_ns: percentile(&self.single, 0.99),
            cpu_ns: median(&mut self.single_cpu),
            rate_1: median(&mut self.single_rates),
            many_median_ns: percentile(&self.many, 0.5),
            many_p99_ns: percentile(&self.many, 0.99),
            rate_many: median(&mut self.many_rates),
            round_medians: self.round_medians,
        }
    }
}

/// One round's run of `variant`.
async fn measure_once(fixture: &Arc<Fixture>, variant: Variant, into: &mut Measured) {
    let samples = variant.samples();
    let cpu_before = variant_cpu_ns(variant, fixture);
    let (elapsed, latencies) = contended(fixture, variant, 1, samples as u64).await;
    let cpu_after = variant_cpu_ns(variant, fixture);
    if let (Some(before), Some(after)) = (cpu_before, cpu_after) {
        into.single_cpu
            .push(after.saturating_sub(before) as f64 / samples as f64);
    }
    let mut round = latencies.clone();
    into.round_medians.push(median(&mut round));
    into.single.extend(latencies);
    into.single_rates
        .push(samples as f64 / elapsed.as_secs_f64());
    let clients = variant.clients();
    if clients > 1 {
        let calls = match variant {
            Variant::InProcess => samples as u64,
            _ => CALLS_PER_CLIENT * clients as u64,
        };
        let (elapsed, latencies) = contended(fixture, variant, clients, calls).await;
        into.many_rates
            .push(latencies.len() as f64 / elapsed.as_secs_f64());
        into.many.extend(latencies);
    }
}

/// Runs every variant round by round and prints the figures.
pub(crate) fn summary(runtime: &Runtime, fixture: &Arc<Fixture>) {
    let count = Variant::ALL.len();
    let mut measured: Vec<Measured> = Variant::ALL.iter().map(|_| Measured::default()).collect();
    runtime.block_on(async {
        for round in 0..ROUNDS {
            for step in 0..count {
                let offset = if round % 2 == 0 {
                    step
                } else {
                    count - 1 - step
                };
                let index = (round + offset) % count;
                measure_once(fixture, Variant::ALL[index], &mut measured[index]).await;
            }
        }
    });
    let results: Vec<Summary> = measured.into_iter().map(Measured::summarise).collect();
    report(&results);
}

fn micros(ns: f64) -> String {
    if ns.is_nan() {
        "-".to_owned()
    } else {
        format!("{:.1}µs", ns / 1_000.0)
    }
}

fn rate(calls_per_second: f64) -> String {
    if calls_per_second.is_nan() {
        "-".to_owned()
    } else {
        format!("{calls_per_second:.0}")
    }
}

fn verdict(ratio: f64) -> &'static str {
    if ratio <= TARGET_RATIO {
        "met"
    } else {
        "NOT met"
    }
}

fn report(results: &[Summary]) {
    let of = |variant: Variant| {
        let index = Variant::ALL.iter().position(|v| *v == variant).unwrap_or(0);
        &results[index]
    };
    println!();
    println!(
        "Summary: {ROUNDS} interleaved rounds; latency of single-client calls and of {CLIENTS} \
         concurrent clients; CPU per call (all threads, client and server) and throughput are \
         medians over rounds"
    );
    println!(
        "{:<40} {:>9} {:>9} {:>9} {:>10} {:>10} {:>10} {:>11}",
        "variant",
        "median",
        "p99",
        "CPU/call",
        "1 client/s",
        format!("{CLIENTS}c median"),
        format!("{CLIENTS}c p99"),
        format!("{CLIENTS} clients/s"),
    );
    for variant in Variant::ALL {
        let result = of(variant);
        println!(
            "{:<40} {:>9} {:>9} {:>9} {:>10} {:>10} {:>10} {:>11}",
            variant.name(),
            micros(result.median_ns),
            micros(result.p99_ns),
            micros(result.cpu_ns),
            rate(result.rate_1),
            micros(result.many_median_ns),
            micros(result.many_p99_ns),
            rate(result.rate_many),
        );
    }
    println!();
    println!(
        "Our layer over the plain rmcp server on the same transport (target <= {TARGET_RATIO:.2}x, \
         i.e. at most +10%):"
    );
    for (transport, ours, plain) in PAIRS {
        let (ours, plain) = (of(ours), of(plain));
        let ratio = ours.median_ns / plain.median_ns;
        println!(
            "  {transport:<6} round trip, 1 client, median: {} vs {} = {ratio:.3}x ({:+.1}%, \
             {:+.1}µs): {}",
            micros(ours.median_ns),
            micros(plain.median_ns),
            (ratio - 1.0) * 100.0,
            (ours.median_ns - plain.median_ns) / 1_000.0,
            verdict(ratio)
        );
        let mut paired: Vec<f64> = ours
            .round_medians
            .iter()
            .zip(&plain.round_medians)
            .map(|(ours, plain)| ours / plain)
            .collect();
        paired.sort_by(f64::total_cmp);
        println!(
            "  {transport:<6} same ratio round by round: median {:.3}x ({:+.1}%), rounds from \
             {:.3}x to {:.3}x: {}",
            percentile(&paired, 0.5),
            (percentile(&paired, 0.5) - 1.0) * 100.0,
            percentile(&paired, 0.0),
            percentile(&paired, 1.0),
            verdict(percentile(&paired, 0.5))
        );
        let p99 = ours.p99_ns / plain.p99_ns;
        let cpu = ours.cpu_ns / plain.cpu_ns;
        println!(
            "  {transport:<6} p99 {p99:.3}x ({:+.1}%); CPU per call {} vs {} = {cpu:.3}x ({:+.1}%)",
            (p99 - 1.0) * 100.0,
            micros(ours.cpu_ns),
            micros(plain.cpu_ns),
            (cpu - 1.0) * 100.0,
        );
        if !ours.rate_many.is_nan() {
            // Time per call under load is 1 / throughput: plain's throughput over ours.
            let load = plain.rate_many / ours.rate_many;
            println!(
                "  {transport:<6} {CLIENTS} clients, time per call (1/throughput): {load:.3}x \
                 ({:+.1}%): {}",
                (load - 1.0) * 100.0,
                verdict(load)
            );
        }
    }
    let (ours, plain, invoke, guarded) = (
        of(Variant::OursDuplex),
        of(Variant::PlainDuplex),
        of(Variant::InvokeDuplex),
        of(Variant::GuardedDuplex),
    );
    let part = |more: &Summary, less: &Summary| {
        format!(
            "{:+.1}µs latency, {:+.1}µs CPU",
            (more.median_ns - less.median_ns) / 1_000.0,
            (more.cpu_ns - less.cpu_ns) / 1_000.0
        )
    };
    println!("Where ours differs from plain on duplex (medians):");
    println!(
        "  registry.invoke in place of the tool body (diag invoke - plain): {}",
        part(invoke, plain)
    );
    println!(
        "  our handler around invoke (ours - diag invoke):                  {}",
        part(ours, invoke)
    );
    println!(
        "  our guarded stdio transport (diag serve_io - ours, duplex):      {}",
        part(guarded, ours)
    );
    println!(
        "  for scale, in-process registry.invoke alone:                     {} latency, {} CPU",
        micros(of(Variant::InProcess).median_ns),
        micros(of(Variant::InProcess).cpu_ns)
    );
    for (id, ours, plain) in HEADLINES {
        print_headline(id, of(ours).median_ns, of(plain).median_ns);
    }
    let (ours_stdio, memory_audit) = (of(Variant::OursStdio), of(Variant::OursStdioMemoryAudit));
    println!(
        "  the durable audit of serve --stdio (ours, stdio - diag --audit memory): {}",
        part(ours_stdio, memory_audit)
    );
    let plain_blocking = of(Variant::PlainStdioBlocking);
    println!("stdio, for scale: the plain server on rmcp's blocking stdio() (diag), median:");
    println!(
        "  ours (stdio_pipes) {} vs plain on blocking stdio() {} = {:.3}x",
        micros(ours_stdio.median_ns),
        micros(plain_blocking.median_ns),
        ours_stdio.median_ns / plain_blocking.median_ns,
    );
}

/// A headline figure and its baseline from this run, as the line `cargo xtask bench` collects.
fn print_headline(id: &str, median_ns: f64, baseline_ns: f64) {
    let figure = serde_json::json!({
        "id": id,
        "median": median_ns,
        "baseline": baseline_ns,
        "unit": "ns",
    });
    println!("BENCH {figure}");
}
