//! An [`AuditQuery`] as one SQL statement (written by `switchboard_audit::sql`, with `?`
//! placeholders), run on a reader connection.
//!
//! Which index answers it is SQLite's choice: every filter that narrows a search on its own has
//! one (`schema`), and each ends with the rowid, so a single filter walks its index newest first.

use rusqlite::{Connection, params_from_iter, types::Value};
use switchboard_audit::{
    AuditQuery, AuditRecord,
    sql::{Parameter, Select},
};

use crate::codec::{self, COLUMNS};

/// The records matching `query`, newest first.
pub(crate) fn run(
    connection: &Connection,
    query: &AuditQuery,
) -> rusqlite::Result<Vec<AuditRecord>> {
    let select = Select::of(query, COLUMNS, |_| "?".to_owned());
    let parameters = select.parameters.iter().map(|parameter| match parameter {
        Parameter::Text(text) => Value::Text((*text).to_owned()),
        Parameter::Integer(integer) => Value::Integer(*integer),
    });
    connection
        .prepare_cached(&select.sql)?
        .query_map(params_from_iter(parameters), codec::read)?
        .collect()
}
