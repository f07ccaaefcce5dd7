//! Tools switched at run time: disabling and enabling tools by name, domain or tag.
//!
//! The registry keeps every registered tool in a full table and publishes only the enabled
//! ones: a disabled tool is simply absent from the table callers read, so it is gone from every
//! list, and a call to it is refused exactly as a call to a tool that does not exist
//! (`tool_not_found`, audited as usual, with look-alike names drawn from the enabled tools
//! only). A client learns no more than "not available", and the call path pays nothing for
//! the switch.
//!
//! What is switched off is kept as rules, in the order they were given: a tool is disabled
//! when the last rule whose [`Selector`] matches it says so. The rules outlive the tools they
//! matched, so a tool registered later (a mounted server's, say) is disabled if its name,
//! domain or tag is. Every switch goes through the registry actor's mailbox, one at a time,
//! so concurrent switches never lose one, and each that changes what is enabled publishes a
//! new table: watchers (MCP sessions) then send `notifications/tools/list_changed`.
//!
//! Every switch names who makes it (a [`CallContext`]) and leaves one audit record in the
//! registry's audit store, beside the calls' (`tool` = `registry.switch`, what was switched in
//! the record's `switch`): what agents may do changes, so who changed it must be told later.

use std::{collections::BTreeSet, fmt, str::FromStr, sync::Arc, time::Instant};

use jiff::Timestamp;
use serde_json::json;
use switchboard_audit::{AuditRecord, Outcome, SWITCH_RECORD_TOOL, SwitchAction, SwitchRecord};
use switchboard_core::{CallContext, ErrorKind, ToolDescriptor};

use crate::{actor::RegistryMsg, error::RegistryError, registry::ToolRegistry, table::ToolTable};

/// Which tools a switch applies to: a tool by name, every tool of a domain, or every tool
/// carrying a tag. Written `tool:NAME`, `domain:NAME` or `tag:NAME` ([`FromStr`],
/// [`fmt::Display`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Selector {
    /// The tool of this name.
    Tool(String),
    /// Every tool of this domain.
    Domain(String),
    /// Every tool carrying this tag.
    Tag(String),
}

impl Selector {
    /// Whether `tool` is one the selector names.
    pub fn matches(&self, tool: &ToolDescriptor) -> bool {
        match self {
            Selector::Tool(name) => *tool.name == **name,
            Selector::Domain(domain) => *tool.domain == **domain,
            Selector::Tag(tag) => tool.tags.iter().any(|own| **own == **tag),
        }
    }

    /// Its kind, as written before the colon.
    fn kind(&self) -> &'static str {
        match self {
            Selector::Tool(_) => "tool",
            Selector::Domain(_) => "domain",
            Selector::Tag(_) => "tag",
        }
    }

    /// What it names, as written after the colon.
    fn value(&self) -> &str {
        match self {
            Selector::Tool(value) | Selector::Domain(value) | Selector::Tag(value) => value,
        }
    }

    /// The same kind of selector, naming `value`.
    fn with_value(&self, value: &str) -> Selector {
        match self {
            Selector::Tool(_) => Selector::Tool(value.to_owned()),
            Selector::Domain(_) => Selector::Domain(value.to_owned()),
            Selector::Tag(_) => Selector::Tag(value.to_owned()),
        }
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind(), self.value())
    }
}

impl FromStr for Selector {
    type Err = RegistryError;

    /// Parses `tool:NAME`, `domain:NAME` or `tag:NAME`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = |reason: &str| RegistryError::InvalidSelector {
            selector: text.to_owned(),
            reason: reason.to_owned(),
        };
        let Some((kind, value)) = text.split_once(':') else {
            return Err(invalid(
                "write `tool:NAME`, `domain:NAME` or `tag:NAME`, such as `tag:beta`",
            ));
        };
        if value.is_empty() {
            return Err(invalid("the name after the colon is empty"));
        }
        match kind {
            "tool" => Ok(Selector::Tool(value.to_owned())),
            "domain" => Ok(Selector::Domain(value.to_owned())),
            "tag" => Ok(Selector::Tag(value.to_owned())),
            _ => Err(invalid(
                "the kind before the colon is one of `tool`, `domain` and `tag`",
            )),
        }
    }
}

/// Whether a switch turns tools off or on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Switch {
    /// Turns tools off: [`ToolRegistry::disable`].
    Disable,
    /// Turns tools on: [`ToolRegistry::enable`].
    Enable,
}

impl Switch {
    /// `disable` or `enable`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Switch::Disable => "disable",
            Switch::Enable => "enable",
        }
    }
}

/// The switches in force, oldest first; the last rule matching a tool decides.
#[derive(Debug, Default)]
pub(crate) struct SwitchRules {
    rules: Vec<(Switch, Selector)>,
}

impl SwitchRules {
    /// Whether `tool` is disabled.
    pub(crate) fn disables(&self, tool: &ToolDescriptor) -> bool {
        self.rules
            .iter()
            .rev()
            .find(|(_, selector)| selector.matches(tool))
            .is_some_and(|(switch, _)| *switch == Switch::Disable)
    }

    /// Adds a rule. A rule with the same selector says nothing any more (the new one decides
    /// for every tool it matched), nor does an enabling rule with no disabling one before it,
    /// so the rules never outgrow the selectors in use.
    fn push(&mut self, switch: Switch, selector: Selector) {
        self.rules.retain(|(_, earlier)| *earlier != selector);
        self.rules.push((switch, selector));
        let leading_enables = self
            .rules
            .iter()
            .take_while(|(switch, _)| *switch == Switch::Enable)
            .count();
        self.rules.drain(..leading_enables);
    }

    /// The table callers see: the tools of `all` no rule disables.
    pub(crate) fn enabled(&self, all: &ToolTable) -> ToolTable {
        if self.rules.is_empty() {
            return all.subset(|_| true);
        }
        all.subset(|tool| !self.disables(&tool.descriptor))
    }

    /// Applies one switch to `all`: the names of the tools whose state it changed, sorted. A
    /// selector that matches no tool of `all` is refused, naming it and the selectors of the
    /// same kind that look like it.
    pub(crate) fn apply(
        &mut self,
        all: &ToolTable,
        switch: Switch,
        selector: Selector,
    ) -> Result<Vec<String>, RegistryError> {
        if !all.iter().any(|tool| selector.matches(&tool.descriptor)) {
            return Err(RegistryError::NoToolSelected {
                similar: similar_selectors(all, &selector),
                selector,
            });
        }
        let before: BTreeSet<Arc<str>> = self.disabled_names(all);
        self.push(switch, selector);
        let after = self.disabled_names(all);
        Ok(before
            .symmetric_difference(&after)
            .map(|name| name.to_string())
            .collect())
    }

    fn disabled_names(&self, all: &ToolTable) -> BTreeSet<Arc<str>> {
        all.iter()
            .filter(|tool| self.disables(&tool.descriptor))
            .map(|tool| Arc::clone(&tool.name))
            .collect()
    }
}

/// Up to three selectors of `selector`'s kind, naming something `all` has, that look like it.
fn similar_selectors(all: &ToolTable, selector: &Selector) -> Vec<String> {
    let mut names: BTreeSet<&str> = BTreeSet::new();
    for tool in all.iter() {
        let descriptor: &ToolDescriptor = &tool.descriptor;
        match selector {
            Selector::Tool(_) => {
                names.insert(&descriptor.name);
            }
            Selector::Domain(_) => {
                names.insert(&descriptor.domain);
            }
            Selector::Tag(_) => names.extend(descriptor.tags.iter().map(|tag| &**tag)),
        }
    }
    let mut scored: Vec<(f64, &str)> = names
        .into_iter()
        .map(|name| (strsim::jaro_winkler(selector.value(), name), name))
        .filter(|(score, _)| *score >= 0.8)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(3)
        .map(|(_, name)| selector.with_value(name).to_string())
        .collect()
}

impl ToolRegistry {
    /// Disables the tools `selector` names, as `by` asks: they leave every list, and a call to
    /// one is refused as a call to an unknown tool (`tool_not_found`). Returns the names of the
    /// tools it disabled (none if they all were already), sorted. The switch also holds for
    /// tools registered later that it names. Fails with [`RegistryError::NoToolSelected`] when
    /// no tool, enabled or not, matches.
    ///
    /// Every switch, refused or not, leaves one audit record (see [`Self::enable`]).
    pub async fn disable(
        &self,
        selector: Selector,
        by: &CallContext,
    ) -> Result<Vec<String>, RegistryError> {
        self.switch(Switch::Disable, selector, by).await
    }

    /// Enables the tools `selector` names again, as `by` asks, whatever disabled them: the
    /// last switch that names a tool decides. Returns the names of the tools it enabled,
    /// sorted. Fails with [`RegistryError::NoToolSelected`] when no tool, enabled or not,
    /// matches.
    ///
    /// Every switch, refused or not, leaves one audit record in the registry's audit store,
    /// beside the calls': `tool` [`SWITCH_RECORD_TOOL`] (`registry.switch`), who from `by`
    /// (org, user, session, correlation id, initiator: what it gives), and in
    /// [`AuditRecord::switch`] the action, the selector and the tools it changed; the outcome
    /// is `ok`, or `tool_not_found` for a selector that names no tool. When the audit log
    /// refuses the record (its store failing under strict durability), the switch is not made:
    /// [`RegistryError::SwitchNotAudited`].
    pub async fn enable(
        &self,
        selector: Selector,
        by: &CallContext,
    ) -> Result<Vec<String>, RegistryError> {
        self.switch(Switch::Enable, selector, by).await
    }

    async fn switch(
        &self,
        switch: Switch,
        selector: Selector,
        by: &CallContext,
    ) -> Result<Vec<String>, RegistryError> {
        let started = Instant::now();
        let timestamp = Timestamp::now();
        // The room for the record is taken first: no switch is made that cannot be audited.
        let reservation = self.shared().audit.reserve().await.map_err(|error| {
            RegistryError::SwitchNotAudited {
                selector: selector.clone(),
                reason: error.to_string(),
            }
        })?;
        let input = json!({"switch": switch.as_str(), "selector": selector.to_string()});
        let switched = ractor::call!(self.actor(), |reply| RegistryMsg::Switch {
            switch,
            selector: selector.clone(),
            reply
        })
        .map_err(|_| RegistryError::Stopped)
        .and_then(|switched| switched);
        let (outcome, changed) = match &switched {
            Ok(changed) => (Outcome::Ok, changed.clone()),
            Err(RegistryError::NoToolSelected { .. }) => {
                (Outcome::Error(ErrorKind::ToolNotFound), Vec::new())
            }
            Err(_) => (Outcome::Error(ErrorKind::DomainUnavailable), Vec::new()),
        };
        let output = outcome
            .is_ok()
            .then(|| switchboard_audit::digest_json(&json!(changed)).ok())
            .flatten();
        let record = AuditRecord {
            id: 0,
            timestamp,
            tool: Arc::from(SWITCH_RECORD_TOOL),
            domain: None,
            category: None,
            org_id: by.org_id.clone(),
            user_id: by.user_id.clone(),
            session_id: by.session_id.clone(),
            correlation_id: by.correlation_id.clone(),
            initiator: by.initiator,
            input_hash: switchboard_audit::digest_json(&input).ok(),
            output_hash: output,
            digest_error: None,
            duration_us: u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
            outcome,
            action: None,
            node: None,
            asks: Vec::new(),
            switch: Some(SwitchRecord {
                action: match switch {
                    Switch::Disable => SwitchAction::Disable,
                    Switch::Enable => SwitchAction::Enable,
                },
                selector: selector.to_string(),
                changed,
            }),
        };
        if let Err(error) = reservation.submit(record).acknowledged().await {
            // The switch is made; the writer keeps the record and writes it once it can.
            tracing::warn!(%selector, %error, "a switch's audit record is not written yet");
        }
        switched
    }

    /// The disabled tools, sorted by name.
    pub fn disabled(&self) -> Vec<Arc<ToolDescriptor>> {
        let enabled = self.shared().table.load();
        self.shared()
            .all
            .load()
            .iter()
            .filter(|tool| enabled.get(&tool.name).is_none())
            .map(|tool| Arc::clone(&tool.descriptor))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_read_and_print_as_kind_colon_name() {
        for (text, selector) in [
            (
                "tool:billing_refund",
                Selector::Tool("billing_refund".into()),
            ),
            ("domain:billing", Selector::Domain("billing".into())),
            ("tag:beta", Selector::Tag("beta".into())),
        ] {
            assert_eq!(text.parse::<Selector>().ok(), Some(selector.clone()));
            assert_eq!(selector.to_string(), text);
        }
        for bad in ["beta", "tag:", "label:beta", ":beta", ""] {
            let error = bad.parse::<Selector>().expect_err(bad);
            assert!(error.to_string().contains(&format!("`{bad}`")), "{error}");
        }
    }

    #[test]
    fn the_rules_stay_as_few_as_the_selectors_in_use() {
        let mut rules = SwitchRules::default();
        rules.push(Switch::Enable, Selector::Tag("beta".into()));
        assert!(rules.rules.is_empty());
        for _ in 0..3 {
            rules.push(Switch::Disable, Selector::Tag("beta".into()));
            rules.push(Switch::Enable, Selector::Tool("x".into()));
        }
        assert_eq!(
            rules.rules,
            [
                (Switch::Disable, Selector::Tag("beta".into())),
                (Switch::Enable, Selector::Tool("x".into())),
            ]
        );
        rules.push(Switch::Enable, Selector::Tag("beta".into()));
        assert!(rules.rules.is_empty(), "{rules:?}");
    }
}
