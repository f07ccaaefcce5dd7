//! The roster's table in PostgreSQL and the versioned migrations that make it (opening and
//! migrating is `switchboard-postgres`'s job; the version lives in the shared
//! `switchboard_schema` table, row `roster`).
//!
//! `roster_orgs` has one row per organisation: its part of the roster (members, shifts, locked
//! weeks, notices) as JSON `TEXT`, the form `switchboard_domain_roster::OrgRoster` serializes
//! to. The roster's rules live in that type, in one place for every store; the database gives
//! the row lock that serializes an organisation's changes across nodes, and the transaction a
//! change commits in. `version` counts the row's changes, for an operator reading the table.
//!
//! Migrations only ever append to [`MIGRATIONS`]: an entry, once released, never changes.

use switchboard_postgres::{Migration, Schema};

/// Every migration, oldest first. Version `n` means the first `n` have run.
pub(crate) const MIGRATIONS: &[Migration] = &[Migration {
    description: "the roster_orgs table",
    sql: r#"
        CREATE TABLE roster_orgs (
            org_id   TEXT COLLATE "C" PRIMARY KEY,
            roster   TEXT   NOT NULL,
            version  BIGINT NOT NULL DEFAULT 1
        );
    "#,
}];

/// The schema version this build migrates to.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The roster's schema, under the name `roster` in `switchboard_schema`.
pub(crate) static SCHEMA: Schema = Schema {
    store: "roster",
    migrations: MIGRATIONS,
};
