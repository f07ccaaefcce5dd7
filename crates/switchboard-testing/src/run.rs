//! A run: the setup the checks need (two organisations, skips that name linked tools, the
//! seed calls), then every tool's checks, then the report.

use std::time::Instant;

use serde_json::Value;
use switchboard_core::ToolDescriptor;
use tracing::Instrument as _;

use crate::{
    cases::check_tool,
    checks::ToolChecks,
    report::Report,
    session::{Session, Who},
};

pub(crate) async fn run(checks: ToolChecks<'_>) -> Report {
    let started = Instant::now();
    let mut report = Report {
        skipped: checks.skips.clone(),
        rng_seed: checks.rng_seed,
        ..Report::default()
    };
    if checks.orgs.len() != 2 || checks.orgs[0].id == checks.orgs[1].id {
        report.setup.push(
            "give two different organisations with `.orgs(home, other)`: tenant isolation is \
             checked between them, and smuggled org_ids name the other one"
                .to_owned(),
        );
        report.elapsed = started.elapsed();
        return report;
    }
    let listed = checks.registry.list();
    report.setup.extend(unknown_tools(&checks, &listed));
    let tools: Vec<_> = listed
        .iter()
        .filter(|tool| {
            checks.domains.is_empty() || checks.domains.iter().any(|d| *d == tool.domain)
        })
        .cloned()
        .collect();
    for domain in &checks.domains {
        if !tools.iter().any(|tool| tool.domain == domain.as_str()) {
            report.setup.push(format!(
                "`only_domain` names `{domain}`, a domain with no tool the registry lists"
            ));
        }
    }
    let mut session = Session::new(&checks);
    for seed in &checks.seeds {
        if let Some(problem) = seed_call(&mut session, &listed, seed).await {
            report.setup.push(problem);
        }
    }
    for tool in &tools {
        let whole_tool_skipped = checks
            .skips
            .iter()
            .any(|skip| skip.invariant.is_none() && skip.tool.as_deref() == Some(&tool.name));
        if whole_tool_skipped {
            continue;
        }
        let span = tracing::debug_span!("tool_checks", tool = %tool.name);
        check_tool(&mut session, tool).instrument(span).await;
        report.tools += 1;
    }
    report.violations = std::mem::take(&mut session.violations);
    report.unreached = std::mem::take(&mut session.unreached);
    report.calls = session.calls;
    report.elapsed = started.elapsed();
    report
}

/// The tools that a skip, an example or a seed names but the registry does not list.
fn unknown_tools(checks: &ToolChecks<'_>, tools: &[std::sync::Arc<ToolDescriptor>]) -> Vec<String> {
    let listed = |name: &str| tools.iter().any(|tool| tool.name == name);
    let named = checks
        .skips
        .iter()
        .filter_map(|skip| skip.tool.as_deref().map(|tool| ("a skip", tool)))
        .chain(
            checks
                .examples
                .keys()
                .map(|tool| ("an example", tool.as_str())),
        )
        .chain(
            checks
                .seeds
                .iter()
                .map(|seed| ("a seed call", seed.tool.as_str())),
        );
    named
        .filter(|(_, tool)| !listed(tool))
        .map(|(what, tool)| {
            format!(
                "{what} names `{tool}`, which the registry does not list{}",
                suggestion(checks, tool)
            )
        })
        .collect()
}

fn suggestion(checks: &ToolChecks<'_>, tool: &str) -> String {
    match checks.registry.similar_names(tool).first() {
        Some(name) => format!(" (did you mean `{name}`?)"),
        None => String::new(),
    }
}

/// Makes one seed call; a problem when it did not succeed.
async fn seed_call(
    session: &mut Session<'_, '_>,
    tools: &[std::sync::Arc<ToolDescriptor>],
    seed: &crate::checks::SeedCall,
) -> Option<String> {
    let Some(org) = session
        .checks
        .orgs
        .iter()
        .position(|org| org.id == seed.org)
    else {
        return Some(format!(
            "a seed call of `{}` names the organisation `{}`, which is not one of the run's two",
            seed.tool, seed.org
        ));
    };
    let tool = tools.iter().find(|tool| tool.name == seed.tool.as_str())?;
    let key = session.fresh("seed");
    let observed = session
        .call(tool, seed.params.clone(), &Who::person(org).with_key(key))
        .await;
    match observed.result {
        Ok(_) => None,
        Err(error) => Some(format!(
            "the seed call `{}` {} as {} failed: {error}",
            seed.tool,
            Value::to_string(&seed.params),
            observed.caller
        )),
    }
}
