//! The layer: one keyed GCRA limiter per rule, asked in turn on every call that passed the
//! registry's checks, the narrowest first (the tool's, then the user's, then the
//! organisation's).
//!
//! A call that one limiter refuses is not offered to the broader ones after it, so a user who
//! runs into their own limit does not use up their organisation's. A call refused by a broader
//! limit has still used a cell of the narrower ones it passed (`governor` takes a cell when it
//! admits one and has no way to give it back): the counts of the narrower keys can only err
//! on the side of refusing.
//!
//! The limiters keep a state per key (an organisation, an organisation's user), so their maps
//! grow with the callers a service sees. They are pruned on a schedule: the first call at
//! least [`PRUNE_EVERY`] after the last pruning drops every key whose limit is back to full
//! (`governor`'s `retain_recent`), then shrinks the maps. Such a key is the same as one never
//! seen, so pruning changes no decision; the maps hold at most the keys that called within
//! the last [`PRUNE_EVERY`] or whose burst is still refilling. The pruning runs on that call's
//! task and takes time in proportion to the keys held.

use std::{
    collections::HashMap,
    sync::Arc,
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

use governor::{
    RateLimiter,
    clock::{Clock, DefaultClock, Reference},
    middleware::NoOpMiddleware,
    state::keyed::DashMapStateStore,
};
use switchboard_core::{BoxFuture, Caller, OrgId, UserId};
use switchboard_registry::{CallLayer, Finished, LayerCall};

use crate::{
    config::Limits,
    rule::{Rule, Scope},
};

/// How often the limiters drop the keys whose limit is back to full (measured on their clock).
pub const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// The layer's name, as logs show it.
const NAME: &str = "rate_limits";

/// A keyed limiter on the clock `C`.
type Keyed<K, C> = RateLimiter<K, DashMapStateStore<K>, C, NoOpMiddleware<<C as Clock>::Instant>>;

/// One rule's limiter, and the rule in words for its refusals.
struct Limiter<C: Clock> {
    keyed: ByScope<C>,
    described: String,
}

/// The limiter's keys: organisations, or users of organisations.
enum ByScope<C: Clock> {
    Org(Keyed<OrgId, C>),
    User(Keyed<(OrgId, UserId), C>),
}

impl<C: Clock> Limiter<C> {
    fn new(rule: &Rule, scope: Scope, tool: Option<&str>, clock: &C) -> Self
    where
        C: Clone,
    {
        let quota = rule.quota();
        let keyed = match scope {
            Scope::Org => ByScope::Org(RateLimiter::dashmap_with_clock(quota, clock.clone())),
            Scope::User => ByScope::User(RateLimiter::dashmap_with_clock(quota, clock.clone())),
        };
        Self {
            keyed,
            described: rule.describe(scope, tool),
        }
    }

    /// Takes a cell for `caller`, or says how long until one is free.
    fn check(&self, caller: &Caller) -> Result<(), Duration> {
        match &self.keyed {
            ByScope::Org(keyed) => keyed
                .check_key(&caller.org_id)
                .map_err(|not_until| not_until.wait_time_from(keyed.clock().now())),
            ByScope::User(keyed) => {
                let key = (caller.org_id.clone(), caller.user_id.clone());
                keyed
                    .check_key(&key)
                    .map_err(|not_until| not_until.wait_time_from(keyed.clock().now()))
            }
        }
    }

    fn prune(&self) {
        match &self.keyed {
            ByScope::Org(keyed) => {
                keyed.retain_recent();
                keyed.shrink_to_fit();
            }
            ByScope::User(keyed) => {
                keyed.retain_recent();
                keyed.shrink_to_fit();
            }
        }
    }

    fn keys(&self) -> usize {
        match &self.keyed {
            ByScope::Org(keyed) => keyed.len(),
            ByScope::User(keyed) => keyed.len(),
        }
    }
}

/// The rate limits of a [`Limits`] as a [`CallLayer`]: a call over a limit is refused with
/// `rate_limited` ([`LayerCall::rate_limited`]), naming the limit and when to retry.
///
/// ```
/// use switchboard_limits::{Limits, RateLimitLayer};
/// use switchboard_registry::ToolRegistry;
///
/// let limits = Limits {
///     per_user: Some("60/min".parse().expect("a rate")),
///     ..Limits::default()
/// };
/// let builder = ToolRegistry::builder().layer(RateLimitLayer::new(&limits));
/// # drop(builder);
/// ```
///
/// The layer is a handle: its clones share the limiters, so a service can keep one to read
/// [`tracked_keys`](Self::tracked_keys) or [`prune`](Self::prune) after handing one to the
/// registry.
pub struct RateLimitLayer<C: Clock = DefaultClock> {
    inner: Arc<Inner<C>>,
}

impl<C: Clock> Clone for RateLimitLayer<C> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

/// The limiters, shared by a layer's clones.
struct Inner<C: Clock> {
    /// Narrowest first: the per-tool limiters are looked up by name, then these in order.
    tools: HashMap<Box<str>, Limiter<C>>,
    per_user: Option<Limiter<C>>,
    per_org: Option<Limiter<C>>,
    clock: C,
    start: C::Instant,
    /// When the limiters were last pruned, in nanoseconds after `start`.
    pruned_at: AtomicU64,
}

impl<C: Clock> std::fmt::Debug for RateLimitLayer<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let layer = &self.inner;
        let mut rules: Vec<&str> = layer
            .tools
            .values()
            .chain(&layer.per_user)
            .chain(&layer.per_org)
            .map(|limiter| limiter.described.as_str())
            .collect();
        rules.sort_unstable();
        f.debug_struct("RateLimitLayer")
            .field("rules", &rules)
            .finish_non_exhaustive()
    }
}

impl RateLimitLayer {
    /// The layer of `limits`, on the monotonic clock.
    pub fn new(limits: &Limits) -> Self {
        Self::with_clock(limits, DefaultClock::default())
    }
}

impl<C: Clock + Clone + Send + Sync + 'static> RateLimitLayer<C>
where
    C::Instant: Send + Sync,
{
    /// The layer of `limits` on `clock` (a `governor::clock::FakeRelativeClock` makes time
    /// stand still for tests).
    pub fn with_clock(limits: &Limits, clock: C) -> Self {
        let tools = limits
            .tools
            .iter()
            .map(|(tool, (rule, scope))| {
                let limiter = Limiter::new(rule, *scope, Some(tool), &clock);
                (Box::from(tool.as_str()), limiter)
            })
            .collect();
        let per_user = limits
            .per_user
            .map(|rule| Limiter::new(&rule, Scope::User, None, &clock));
        let per_org = limits
            .per_org
            .map(|rule| Limiter::new(&rule, Scope::Org, None, &clock));
        let start = clock.now();
        let inner = Inner {
            tools,
            per_user,
            per_org,
            clock,
            start,
            pruned_at: AtomicU64::new(0),
        };
        Self {
            inner: Arc::new(inner),
        }
    }

    /// Drops, from every limiter, the keys whose limit is back to full.
    pub fn prune(&self) {
        self.inner.prune();
    }

    /// How many keys the limiters hold state for, all rules together.
    pub fn tracked_keys(&self) -> usize {
        self.inner.tracked_keys()
    }
}

impl<C: Clock> Inner<C> {
    /// Takes a cell of every limit of this call, narrowest first; the first that has none
    /// left refuses, with its rule in words and how long until it has one.
    fn admit(&self, caller: &Caller, tool: &str) -> Result<(), (&str, Duration)> {
        let limiters = self
            .tools
            .get(tool)
            .into_iter()
            .chain(&self.per_user)
            .chain(&self.per_org);
        for limiter in limiters {
            limiter
                .check(caller)
                .map_err(|retry_after| (limiter.described.as_str(), retry_after))?;
        }
        Ok(())
    }

    /// Prunes the limiters if [`PRUNE_EVERY`] has passed since they last were; of the calls
    /// that find it so at once, one does it.
    fn prune_when_due(&self) {
        let now = u64::from(self.clock.now().duration_since(self.start));
        let pruned_at = self.pruned_at.load(Ordering::Relaxed);
        let due = now.saturating_sub(pruned_at)
            >= u64::try_from(PRUNE_EVERY.as_nanos()).unwrap_or(u64::MAX);
        if due
            && self
                .pruned_at
                .compare_exchange(pruned_at, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.prune();
        }
    }

    fn prune(&self) {
        let before = self.tracked_keys();
        self.limiters().for_each(Limiter::prune);
        tracing::debug!(before, after = self.tracked_keys(), "rate limiters pruned");
    }

    fn tracked_keys(&self) -> usize {
        self.limiters().map(Limiter::keys).sum()
    }

    fn limiters(&self) -> impl Iterator<Item = &Limiter<C>> {
        self.tools
            .values()
            .chain(&self.per_user)
            .chain(&self.per_org)
    }
}

impl<C: Clock + Clone + Send + Sync + 'static> CallLayer for RateLimitLayer<C>
where
    C::Instant: Send + Sync,
{
    fn name(&self) -> &str {
        NAME
    }

    fn call<'a>(&'a self, call: LayerCall<'a>) -> BoxFuture<'a, Finished> {
        Box::pin(async move {
            let admitted = self.inner.admit(call.caller(), &call.tool().name);
            self.inner.prune_when_due();
            match admitted {
                Ok(()) => call.run().await,
                Err((limit, retry_after)) => {
                    tracing::debug!(
                        tool = %call.tool().name,
                        org = %call.caller().org_id,
                        user = %call.caller().user_id,
                        limit,
                        ?retry_after,
                        "a rate limit refused the call"
                    );
                    call.rate_limited(limit, retry_after)
                }
            }
        })
    }
}
