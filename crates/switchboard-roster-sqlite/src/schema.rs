//! The roster database's schema: its application id and the versioned migrations that run at
//! startup (opening and migrating is `switchboard-sqlite`'s job, shared with the other SQLite
//! stores).
//!
//! `roster_orgs` has one row per organisation: its part of the roster (members, shifts, locked
//! weeks, notices) as JSON `TEXT`, the form `switchboard_domain_roster::OrgRoster` serializes
//! to. The roster's rules live in that type, in one place for every store; the file gives the
//! write lock that serializes changes across processes, and the transaction a change commits
//! in. `version` counts the row's writes, for an operator reading the table.
//!
//! Migrations only ever append to [`MIGRATIONS`]: an entry, once released, never changes.

use switchboard_sqlite::{Migration, Schema};

/// `PRAGMA application_id` of a Switchboard roster database: "SBRO" in ASCII.
pub const APPLICATION_ID: i32 = 0x5342_524f;

/// Every migration, oldest first. Version `n` means the first `n` have run.
pub(crate) const MIGRATIONS: &[Migration] = &[Migration {
    description: "the roster_orgs table",
    sql: "
        CREATE TABLE roster_orgs (
            org_id   TEXT    PRIMARY KEY,
            roster   TEXT    NOT NULL,
            version  INTEGER NOT NULL DEFAULT 1
        ) STRICT;
    ",
}];

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The roster store's schema, as `switchboard-sqlite` opens and migrates it.
pub(crate) static SCHEMA: Schema = Schema {
    store: "roster",
    application_id: APPLICATION_ID,
    migrations: MIGRATIONS,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_application_id_spells_sbro() {
        assert_eq!(APPLICATION_ID.to_be_bytes(), *b"SBRO");
    }
}
