//! The tools `serve` switches off at start: the config file's `[serve] disabled_tools`, then
//! `--disable`, then `--enable` (which turns back on what the other two turned off).
//!
//! Each selector is checked twice: its form when the command line and the file are read
//! (`tool:NAME`, `domain:NAME` or `tag:NAME`, else a usage error before the runtime boots),
//! and that it names a tool once every tool is registered (linked tools, exported workflows,
//! the mounted servers' tools), else a usage error naming it and where it came from. The
//! switches themselves are the registry's (`ToolRegistry::disable`), so a client never sees a
//! disabled tool: they are applied before the server takes its first client.
//!
//! Each leaves its audit record, as every switch does, made by the operator: user `operator`,
//! a human, no organisation (a switch holds for every one), session `serve-config` for the
//! file's entries and `serve-flags` for the flags', and one correlation id for every switch of
//! this start (`serve-start-<uuid>`), so `switchboard audit --tool registry.switch` tells them
//! from switches made later through the API.

use clap::Args;
use switchboard::{Selector, Switch, ToolRegistry};
use switchboard_core::{CallContext, Initiator};

use crate::app::UsageError;

/// `serve`'s `--disable` and `--enable`.
#[derive(Debug, Clone, Args)]
pub(crate) struct SwitchArgs {
    /// Disable the tools SELECTOR names (`tool:NAME`, `domain:NAME`, `tag:NAME`) at start,
    /// after the config file's `[serve] disabled_tools`: they are not listed, and a call to one
    /// is refused as a call to an unknown tool. Repeatable.
    #[arg(long, value_name = "SELECTOR", value_parser = parse_selector)]
    pub(crate) disable: Vec<Selector>,

    /// Enable again, at start, the tools SELECTOR names that the config file or --disable
    /// disabled (`--disable domain:billing --enable tool:billing_status`). Repeatable; applied
    /// last.
    #[arg(long, value_name = "SELECTOR", value_parser = parse_selector)]
    pub(crate) enable: Vec<Selector>,
}

/// A `--disable`/`--enable` value; clap names the flag and the value beside the reason.
fn parse_selector(text: &str) -> Result<Selector, String> {
    text.parse().map_err(|error: switchboard::RegistryError| {
        let message = error.to_string();
        message
            .strip_prefix(&format!("invalid tool selector `{text}`: "))
            .map_or(message.clone(), str::to_owned)
    })
}

/// One switch to apply at start, with where it was asked for (for its error message) and the
/// session its audit record names.
#[derive(Debug, Clone)]
struct StartSwitch {
    switch: Switch,
    selector: Selector,
    source: &'static str,
    session: &'static str,
}

/// The user a start switch's audit record names.
const OPERATOR: &str = "operator";

/// The session of the audit record of a switch of the config file.
const FILE_SESSION: &str = "serve-config";

/// The session of the audit record of a switch of `--disable` or `--enable`.
const FLAGS_SESSION: &str = "serve-flags";

/// Who makes the start switches of `session`, under `correlation` (see the module docs).
fn operator(session: &str, correlation: &str) -> CallContext {
    CallContext::builder()
        .user(OPERATOR)
        .session(session)
        .correlation(correlation)
        .initiator(Initiator::Human)
        .build()
}

/// Every switch `serve` applies at start, in order.
#[derive(Debug, Clone, Default)]
pub(crate) struct StartSwitches {
    switches: Vec<StartSwitch>,
}

/// Where the config file's switches come from, for messages.
const FILE_SOURCE: &str = "in the config file's [serve] disabled_tools";

impl StartSwitches {
    /// The file's `disabled_tools`, then `--disable`, then `--enable`. An entry of the file
    /// that is not a selector is a usage error naming it.
    pub(crate) fn prepare(
        file_disabled: &[String],
        disable: Vec<Selector>,
        enable: Vec<Selector>,
    ) -> Result<Self, UsageError> {
        let mut switches = Vec::with_capacity(file_disabled.len() + disable.len() + enable.len());
        for text in file_disabled {
            let selector = text
                .parse()
                .map_err(|error| UsageError::new(format!("{error} ({FILE_SOURCE})")))?;
            switches.push(StartSwitch {
                switch: Switch::Disable,
                selector,
                source: FILE_SOURCE,
                session: FILE_SESSION,
            });
        }
        let flagged = |switch, source| {
            move |selector| StartSwitch {
                switch,
                selector,
                source,
                session: FLAGS_SESSION,
            }
        };
        switches.extend(
            disable
                .into_iter()
                .map(flagged(Switch::Disable, "given with --disable")),
        );
        switches.extend(
            enable
                .into_iter()
                .map(flagged(Switch::Enable, "given with --enable")),
        );
        Ok(Self { switches })
    }

    /// Applies the switches to `registry`, in order, as the operator (see the module docs). A
    /// selector that names no tool is a usage error naming it, the tools it may have meant, and
    /// where it was given.
    pub(crate) async fn apply(&self, registry: &ToolRegistry) -> Result<(), UsageError> {
        let correlation = format!("serve-start-{}", uuid::Uuid::now_v7());
        for StartSwitch {
            switch,
            selector,
            source,
            session,
        } in &self.switches
        {
            let by = operator(session, &correlation);
            let switched = match switch {
                Switch::Disable => registry.disable(selector.clone(), &by).await,
                Switch::Enable => registry.enable(selector.clone(), &by).await,
            };
            let changed =
                switched.map_err(|error| UsageError::new(format!("{error} ({source})")))?;
            tracing::info!(%selector, ?switch, tools = ?changed, "switched tools at start");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_comes_first_then_disable_then_enable() {
        let switches = StartSwitches::prepare(
            &["tag:beta".to_owned()],
            vec![Selector::Domain("billing".to_owned())],
            vec![Selector::Tool("billing_status".to_owned())],
        )
        .expect("valid selectors");
        let order: Vec<(Switch, String)> = switches
            .switches
            .iter()
            .map(|switch| (switch.switch, switch.selector.to_string()))
            .collect();
        assert_eq!(
            order,
            [
                (Switch::Disable, "tag:beta".to_owned()),
                (Switch::Disable, "domain:billing".to_owned()),
                (Switch::Enable, "tool:billing_status".to_owned()),
            ]
        );
    }

    #[test]
    fn a_file_entry_that_is_no_selector_is_a_usage_error_naming_it() {
        let error = StartSwitches::prepare(&["beta".to_owned()], Vec::new(), Vec::new())
            .expect_err("not a selector");
        let message = error.to_string();
        assert!(message.contains("`beta`"), "{message}");
        assert!(
            message.ends_with("(in the config file's [serve] disabled_tools)"),
            "{message}"
        );
    }
}
