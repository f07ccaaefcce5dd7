//! [`ToolChecks`]: what a test asks the kit to check, and the options that point it at the
//! interesting states (seed calls, example inputs, state probes, markers, skips).
//!
//! Everything is derived from the registry by default: the tools and their schemas, categories
//! and permissions, the roles that grant each permission, and how the registry treats an
//! agent's mutations. The options only add what the registry cannot know: what a domain's
//! state looks like, and which strings are one organisation's data.

use std::{collections::BTreeMap, fmt, future::Future, pin::Pin, sync::Arc};

use serde_json::Value;
use switchboard_core::{Domain, Role};
use switchboard_registry::ToolRegistry;

use crate::{
    report::{Invariant, Report, Skipped},
    run,
};

/// A state probe's answer, boxed.
pub(crate) type ProbeFuture = Pin<Box<dyn Future<Output = Value> + Send>>;

/// Reads a domain's state as a comparable value.
pub(crate) type Probe = Arc<dyn Fn() -> ProbeFuture + Send + Sync>;

/// An organisation the kit calls as, and the user it calls as there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Org {
    pub(crate) id: String,
    pub(crate) user: String,
    /// The roles to call with; `None`: for each tool, the roles that grant its permission.
    pub(crate) roles: Option<Vec<Role>>,
}

impl Org {
    /// The organisation `id`, called as the user `switchboard-testing` with, for each tool,
    /// the roles that grant its permission.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            user: "switchboard-testing".to_owned(),
            roles: None,
        }
    }

    /// Calls as `user` (a user the domains know, when their tools look the caller up).
    #[must_use]
    pub fn user(mut self, user: impl Into<String>) -> Self {
        self.user = user.into();
        self
    }

    /// Calls with these roles for every tool, instead of the roles that grant each tool's
    /// permission.
    #[must_use]
    pub fn roles<R: Into<Role>>(mut self, roles: impl IntoIterator<Item = R>) -> Self {
        self.roles = Some(roles.into_iter().map(Into::into).collect());
        self
    }

    /// The organisation's id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl From<&str> for Org {
    fn from(id: &str) -> Self {
        Org::new(id)
    }
}

impl From<String> for Org {
    fn from(id: String) -> Self {
        Org::new(id)
    }
}

/// A call made before the checks, as a confirmed person of `org`.
#[derive(Debug, Clone)]
pub(crate) struct SeedCall {
    pub(crate) org: String,
    pub(crate) tool: String,
    pub(crate) params: Value,
}

/// The checks of Switchboard's promises over every tool of a registry.
///
/// ```no_run
/// # async fn example(registry: switchboard_registry::ToolRegistry) {
/// use switchboard_testing::ToolChecks;
///
/// ToolChecks::new(&registry)
///     .orgs("acme", "globex")
///     .run()
///     .await
///     .assert_passed();
/// # }
/// ```
#[must_use = "a check does nothing until it is run"]
pub struct ToolChecks<'r> {
    pub(crate) registry: &'r ToolRegistry,
    pub(crate) orgs: Vec<Org>,
    pub(crate) cases: u32,
    pub(crate) rng_seed: u64,
    pub(crate) skips: Vec<Skipped>,
    pub(crate) examples: BTreeMap<String, Vec<Value>>,
    pub(crate) markers: BTreeMap<String, Vec<String>>,
    pub(crate) probes: Vec<(String, Probe)>,
    pub(crate) seeds: Vec<SeedCall>,
    /// When not empty, only these domains' tools are checked.
    pub(crate) domains: Vec<String>,
}

impl fmt::Debug for ToolChecks<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolChecks")
            .field("orgs", &self.orgs)
            .field("cases", &self.cases)
            .field("rng_seed", &self.rng_seed)
            .field("skips", &self.skips)
            .field("examples", &self.examples)
            .field("markers", &self.markers)
            .field(
                "probes",
                &self.probes.iter().map(|(name, _)| name).collect::<Vec<_>>(),
            )
            .field("seeds", &self.seeds)
            .field("domains", &self.domains)
            .finish_non_exhaustive()
    }
}

/// Generated valid inputs per tool by default.
pub const DEFAULT_CASES: u32 = 32;

impl<'r> ToolChecks<'r> {
    /// Checks every tool `registry` lists. Give two organisations with
    /// [`orgs`](Self::orgs) before running.
    pub fn new(registry: &'r ToolRegistry) -> Self {
        Self {
            registry,
            orgs: Vec::new(),
            cases: DEFAULT_CASES,
            rng_seed: 0x5EED_5B0A_2D00_0001,
            skips: Vec::new(),
            examples: BTreeMap::new(),
            markers: BTreeMap::new(),
            probes: Vec::new(),
            seeds: Vec::new(),
            domains: Vec::new(),
        }
    }

    /// The two organisations to call as: tenant isolation is checked between them, and
    /// smuggled `org_id`s name the other one.
    pub fn orgs(mut self, home: impl Into<Org>, other: impl Into<Org>) -> Self {
        self.orgs = vec![home.into(), other.into()];
        self
    }

    /// How many valid inputs to generate per tool (default [`DEFAULT_CASES`]); each way of
    /// breaking an input gets an eighth as many, at least one.
    pub fn cases(mut self, cases: u32) -> Self {
        self.cases = cases.max(1);
        self
    }

    /// The seed of the input generator (a fixed one by default, so that a run is repeatable).
    pub fn rng_seed(mut self, seed: u64) -> Self {
        self.rng_seed = seed;
        self
    }

    /// Checks only the tools of `domain` (given again, of each domain named): a service's own
    /// domains, when the registry also holds others it does not own. By default every tool the
    /// registry lists is checked.
    pub fn only_domain(mut self, domain: impl Into<String>) -> Self {
        self.domains.push(domain.into());
        self
    }

    /// Leaves `tool` out of every check, for `reason` (shown in the report).
    pub fn skip_tool(mut self, tool: impl Into<String>, reason: impl Into<String>) -> Self {
        self.skips.push(Skipped {
            tool: Some(tool.into()),
            invariant: None,
            reason: reason.into(),
        });
        self
    }

    /// Leaves `invariant` unchecked for every tool, for `reason`.
    pub fn skip(mut self, invariant: Invariant, reason: impl Into<String>) -> Self {
        self.skips.push(Skipped {
            tool: None,
            invariant: Some(invariant),
            reason: reason.into(),
        });
        self
    }

    /// Leaves `invariant` unchecked for `tool`, for `reason`.
    pub fn skip_for(
        mut self,
        tool: impl Into<String>,
        invariant: Invariant,
        reason: impl Into<String>,
    ) -> Self {
        self.skips.push(Skipped {
            tool: Some(tool.into()),
            invariant: Some(invariant),
            reason: reason.into(),
        });
        self
    }

    /// An input of `tool` that reaches a state generated ones cannot (an id that exists):
    /// called as each organisation, beside the generated ones, and the input the mutation
    /// checks use first.
    pub fn example(mut self, tool: impl Into<String>, params: Value) -> Self {
        self.examples.entry(tool.into()).or_default().push(params);
        self
    }

    /// A string that only `org`'s data contains (a member's name, a record's id): no answer
    /// to another organisation's caller may contain it. Each organisation's id is one
    /// already.
    pub fn marker(mut self, org: impl Into<String>, marker: impl Into<String>) -> Self {
        self.markers
            .entry(org.into())
            .or_default()
            .push(marker.into());
        self
    }

    /// Reads the state of `name` (a domain, or any store the tools keep data in) as a value
    /// to compare: read tools, refused calls and replays must leave it unchanged.
    pub fn state<F, Fut>(mut self, name: impl Into<String>, probe: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Value> + Send + 'static,
    {
        let probe: Probe = Arc::new(move || Box::pin(probe()) as ProbeFuture);
        self.probes.push((name.into(), probe));
        self
    }

    /// Reads domain `D`'s state, as its tools see it, around each call that must change
    /// nothing ([`ToolRegistry::state_of`], compared by its `Debug` text). For state kept
    /// outside the domain's cell (a database the state only holds a handle on), give a probe
    /// of the store with [`state`](Self::state) instead.
    pub fn domain<D>(self) -> Self
    where
        D: Domain,
        D::State: fmt::Debug,
    {
        let registry = self.registry.downgrade();
        self.state(D::NAME, move || {
            let lines = registry
                .upgrade()
                .and_then(|registry| registry.state_of::<D>())
                .map(|state| {
                    format!("{:#?}", *state)
                        .lines()
                        .map(|line| Value::String(line.to_owned()))
                        .collect()
                })
                .unwrap_or_default();
            std::future::ready(Value::Array(lines))
        })
    }

    /// A call made before the checks, as a confirmed person of `org`: data the checks then
    /// find (pair it with a [`marker`](Self::marker)). A seed call that fails fails the run.
    pub fn seed(mut self, org: impl Into<String>, tool: impl Into<String>, params: Value) -> Self {
        self.seeds.push(SeedCall {
            org: org.into(),
            tool: tool.into(),
            params,
        });
        self
    }

    /// Runs every check and reports what held and what did not.
    pub async fn run(self) -> Report {
        run::run(self).await
    }

    /// Whether `invariant` is skipped for `tool`.
    pub(crate) fn skipped(&self, tool: &str, invariant: Invariant) -> bool {
        self.skips.iter().any(|skip| {
            skip.tool.as_deref().is_none_or(|skipped| skipped == tool)
                && skip.invariant.is_none_or(|skipped| skipped == invariant)
        })
    }
}
