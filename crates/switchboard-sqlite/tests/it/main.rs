//! `switchboard-sqlite`'s integration tests, in one test binary: opening a file through
//! `open_database` with a small test schema, so every refusal every store shares is tested once
//! here rather than in each store.

mod open;
mod refusals;
mod test_schema;
