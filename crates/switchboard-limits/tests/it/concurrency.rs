//! Rate limits hold under 32 concurrent clients: over random limits (per organisation, per
//! user, per tool) and random call sequences, no window lets more calls through than
//! configured.
//!
//! The clock is `governor`'s fake one, so the property does not depend on timing: time moves
//! only between rounds, and in each round the 32 clients call at once (tasks on a
//! two-thread runtime, through a real registry with the layer). What a key may get through
//! between the start of round `i` and the end of round `j` is the GCRA bound,
//! `burst + floor((t_j - t_i) / interval)`; the test counts what each key got through in
//! every such window and compares.

use std::{collections::BTreeMap, num::NonZeroU32, sync::Arc, time::Duration};

use governor::clock::FakeRelativeClock;
use proptest::prelude::*;
use switchboard_core::InvokeError;
use switchboard_limits::{Limits, Rule, Scope};

use crate::probe::{call, limited};

const CLIENTS: usize = 32;

/// The client `index`: its organisation, its user and the tool it calls. Two organisations,
/// five users in each, and two tools, shared out so that keys of every kind have several
/// clients.
fn client(index: usize) -> (&'static str, String, &'static str) {
    let org = ["acme", "globex"][index % 2];
    let user = format!("user-{}", index % 5);
    let tool = ["probe_ping", "probe_pong"][index % 3 % 2];
    (org, user, tool)
}

/// A rule of `calls` per `calls * interval_s` seconds, with a burst.
fn rule_strategy() -> impl Strategy<Value = Rule> {
    (1_u32..=4, 1_u64..=5, 1_u32..=6).prop_map(|(calls, interval_s, burst)| {
        let calls = NonZeroU32::new(calls).expect("1 or more");
        let period = Duration::from_secs(u64::from(calls.get()) * interval_s);
        Rule::new(calls, period)
            .expect("whole seconds")
            .with_burst(NonZeroU32::new(burst).expect("1 or more"))
    })
}

fn limits_strategy() -> impl Strategy<Value = Limits> {
    (
        proptest::option::of(rule_strategy()),
        proptest::option::of(rule_strategy()),
        proptest::option::of((rule_strategy(), any::<bool>())),
    )
        .prop_filter("at least one limit", |(org, user, tool)| {
            org.is_some() || user.is_some() || tool.is_some()
        })
        .prop_map(|(per_org, per_user, tool)| {
            let tools = tool
                .map(|(rule, per_org)| {
                    let scope = if per_org { Scope::Org } else { Scope::User };
                    ("probe_ping".to_owned(), (rule, scope))
                })
                .into_iter()
                .collect();
            Limits {
                per_org,
                per_user,
                tools,
            }
        })
}

/// Rounds: seconds to advance the clock first, then how many calls each client makes.
fn rounds_strategy() -> impl Strategy<Value = Vec<(u64, Vec<u8>)>> {
    proptest::collection::vec(
        (0_u64..=12, proptest::collection::vec(0_u8..=3, CLIENTS)),
        1..=6,
    )
}

/// Runs the rounds; answers the clock's time of each round and how many calls of each client
/// were admitted in it.
fn run(limits: &Limits, rounds: &[(u64, Vec<u8>)]) -> Vec<(u64, Vec<u32>)> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let clock = FakeRelativeClock::default();
        let (registry, _layer) = limited(limits, &clock).await;
        let registry = Arc::new(registry);
        let mut now = 0;
        let mut admitted = Vec::new();
        for (advance, calls) in rounds {
            clock.advance(Duration::from_secs(*advance));
            now += advance;
            let tasks: Vec<_> = calls
                .iter()
                .enumerate()
                .map(|(index, count)| {
                    let registry = Arc::clone(&registry);
                    let count = *count;
                    tokio::spawn(async move {
                        let (org, user, tool) = client(index);
                        let mut through = 0;
                        for _ in 0..count {
                            match call(&registry, tool, org, &user).await {
                                Ok(()) => through += 1,
                                Err(InvokeError::RateLimited { retry_after_ms, .. }) => {
                                    assert!(retry_after_ms >= 1);
                                }
                                Err(other) => panic!("only rate limits refuse: {other:?}"),
                            }
                        }
                        through
                    })
                })
                .collect();
            let mut round = Vec::with_capacity(CLIENTS);
            for task in tasks {
                round.push(task.await.expect("a client task"));
            }
            admitted.push((now, round));
        }
        admitted
    })
}

/// Checks one rule: for each of its keys (`key_of` a client, `None` if the rule does not
/// count that client's calls), no window got more calls through than the GCRA bound.
fn check_rule(
    admitted: &[(u64, Vec<u32>)],
    rule: &Rule,
    key_of: impl Fn(usize) -> Option<String>,
    what: &str,
) -> Result<(), TestCaseError> {
    let mut per_key: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for (round, (_, through)) in admitted.iter().enumerate() {
        for (index, count) in through.iter().enumerate() {
            if let Some(key) = key_of(index) {
                per_key
                    .entry(key)
                    .or_insert_with(|| vec![0; admitted.len()])[round] += u64::from(*count);
            }
        }
    }
    let interval = rule.interval().as_secs();
    for (key, counts) in per_key {
        for first in 0..admitted.len() {
            let mut total = 0;
            for last in first..admitted.len() {
                total += counts[last];
                let span = admitted[last].0 - admitted[first].0;
                let bound = u64::from(rule.burst().get()) + span / interval;
                prop_assert!(
                    total <= bound,
                    "{what} {rule} (burst {}) let {total} calls of {key} through in rounds \
                     {first}..={last} ({span} s), more than {bound}",
                    rule.burst()
                );
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn no_window_lets_more_calls_through_than_configured(
        limits in limits_strategy(),
        rounds in rounds_strategy(),
    ) {
        let admitted = run(&limits, &rounds);
        let org = |index: usize| Some(client(index).0.to_owned());
        let user = |index: usize| {
            let (org, user, _) = client(index);
            Some(format!("{org}/{user}"))
        };
        if let Some(rule) = &limits.per_org {
            check_rule(&admitted, rule, org, "per_org")?;
        }
        if let Some(rule) = &limits.per_user {
            check_rule(&admitted, rule, user, "per_user")?;
        }
        if let Some((rule, scope)) = limits.tools.get("probe_ping") {
            let pings = |index: usize| {
                (client(index).2 == "probe_ping").then(|| match scope {
                    Scope::Org => org(index),
                    Scope::User => user(index),
                })?
            };
            check_rule(&admitted, rule, pings, "probe_ping")?;
        }
        // The limits admit, too: the first round's first call of any client is admitted.
        let (_, first) = &admitted[0];
        let asked: u32 = rounds[0].1.iter().map(|count| u32::from(*count)).sum();
        prop_assert!(asked == 0 || first.iter().sum::<u32>() >= 1, "{first:?}");
    }
}
