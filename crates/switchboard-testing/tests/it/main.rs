//! The kit's integration tests: on domains broken on purpose, and the run's own options.
//! `architecture-tests` runs the kit on every sample domain.

mod fixtures;
mod options;

// Links every sample domain (rust-lang/rust#64731).
use switchboard_domains as _;
