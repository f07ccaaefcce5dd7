//! Rate limits per organisation, per user and per tool, as a layer around the registry's
//! calls ([`RateLimitLayer`], a `CallLayer`), set in code or read from a config file's
//! `[limits]` table ([`Limits`]).
//!
//! A call over a limit is refused before it runs with the stable kind `rate_limited`, which
//! names the limit as configured (`60 calls per 60 s per user`) and says when to retry. The
//! limits are `governor`'s keyed GCRA limiters: a rate and a burst per key, no background
//! task, and a schedule that drops the keys whose limit is back to full (see [`layer`]).
//!
//! What this crate does not do: share counts between nodes (each process limits the calls it
//! serves), or limit calls the registry refused before its layers (those never reach them).

mod config;
pub mod layer;
mod rule;

pub use config::{Limits, LimitsError};
pub use layer::{PRUNE_EVERY, RateLimitLayer};
pub use rule::{RATE_FORMAT, Rule, Scope};
