//! The navigator's integration tests, over a registry with the sample domains.

// The sample domains, linked so their tools and pages register (rust-lang/rust#64731).
use switchboard_domains as _;

mod left_out_domains;
mod refusals_audited;
