//! The rate-limit layer in a real registry: limits per organisation, per user and per tool
//! are independent, a refusal names its limit and when to retry, pruning drops idle keys, and
//! under 32 concurrent clients no window lets more calls through than configured.

mod concurrency;
mod keys;
mod probe;
