//! Tools and orgs as small integer keys: the `audit_tools` and `audit_orgs` tables, and the
//! writer's cache of them.
//!
//! A row stores `tool_key` and `org_key` instead of the names, and the postings are keyed by
//! them: an integer is cheaper to bind, compare and store than a name, in the row and in every
//! posting. There are few distinct tools and orgs, so the dictionaries stay tiny and their
//! names can be long.
//!
//! A key, once given to a name, never changes and is never reused (the tables are only
//! appended to), so a key the writer cached stays right for as long as the file exists, even
//! when another process appends to the same file. The one exception is a key given inside a
//! transaction that then fails: it was rolled back with the transaction, so the writer forgets
//! its whole cache after a failed batch ([`Dictionaries::forget`]).

use foldhash::fast::RandomState;
use rusqlite::{Connection, OptionalExtension};
use std::collections::HashMap;

/// One dictionary table: which one, and the keys of the names the writer met so far.
#[derive(Debug)]
pub(crate) struct Dictionary {
    table: Table,
    keys: HashMap<Box<str>, i64, RandomState>,
}

/// The dictionary tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Table {
    /// `audit_tools`: tool names.
    Tools,
    /// `audit_orgs`: org ids.
    Orgs,
}

impl Table {
    fn find(self) -> &'static str {
        match self {
            Table::Tools => "SELECT key FROM audit_tools WHERE name = ?1",
            Table::Orgs => "SELECT key FROM audit_orgs WHERE name = ?1",
        }
    }

    fn add(self) -> &'static str {
        match self {
            Table::Tools => "INSERT INTO audit_tools (name) VALUES (?1) RETURNING key",
            Table::Orgs => "INSERT INTO audit_orgs (name) VALUES (?1) RETURNING key",
        }
    }
}

impl Dictionary {
    fn new(table: Table) -> Self {
        Self {
            table,
            keys: HashMap::default(),
        }
    }

    /// The key of `name`, adding it to the table if it is new. Call inside the writer's
    /// transaction: it holds the write lock, so no other process adds the same name meanwhile.
    pub(crate) fn key(&mut self, connection: &Connection, name: &str) -> rusqlite::Result<i64> {
        if let Some(&key) = self.keys.get(name) {
            return Ok(key);
        }
        let key = match find(connection, self.table, name)? {
            Some(key) => key,
            None => connection
                .prepare_cached(self.table.add())?
                .query_row([name], |row| row.get(0))?,
        };
        self.keys.insert(Box::from(name), key);
        Ok(key)
    }
}

/// The key of `name` in `table`, if it has one.
pub(crate) fn find(
    connection: &Connection,
    table: Table,
    name: &str,
) -> rusqlite::Result<Option<i64>> {
    connection
        .prepare_cached(table.find())?
        .query_row([name], |row| row.get(0))
        .optional()
}

/// The writer's two dictionaries.
#[derive(Debug)]
pub(crate) struct Dictionaries {
    /// Tool names.
    pub(crate) tools: Dictionary,
    /// Org ids.
    pub(crate) orgs: Dictionary,
}

impl Dictionaries {
    pub(crate) fn new() -> Self {
        Self {
            tools: Dictionary::new(Table::Tools),
            orgs: Dictionary::new(Table::Orgs),
        }
    }

    /// Forgets every cached key; called after a failed transaction, which may have rolled back
    /// keys it added.
    pub(crate) fn forget(&mut self) {
        self.tools.keys.clear();
        self.orgs.keys.clear();
    }
}
