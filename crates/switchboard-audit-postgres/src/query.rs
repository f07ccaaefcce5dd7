//! An [`AuditQuery`] as one SQL statement (written by `switchboard_audit::sql`, with `$n`
//! placeholders), its parameters owned so that it can run on the store's runtime.
//!
//! Which index answers it is PostgreSQL's choice: every filter that narrows a search on its own
//! has an index on `(column, id)` (`schema`), so a single filter walks its index backwards,
//! newest first, with no sort.

use switchboard_audit::{AuditQuery, sql};
use switchboard_postgres::tokio_postgres::types::ToSql;

use crate::codec::{self, COLUMNS};

/// One parameter of a [`Select`]: owned, so the statement can run on the store's runtime.
pub(crate) type Parameter = Box<dyn ToSql + Send + Sync>;

/// A `SELECT` statement and its parameters, in order.
#[derive(Debug)]
pub(crate) struct Select {
    pub(crate) sql: String,
    pub(crate) parameters: Vec<Parameter>,
}

impl Select {
    /// The statement that answers `query`; text is stored as [`codec::storable`] makes it, so
    /// it is compared that way too.
    pub(crate) fn of(query: &AuditQuery) -> Self {
        let select = sql::Select::of(query, COLUMNS, |n| format!("${n}"));
        let parameters = select
            .parameters
            .into_iter()
            .map(|parameter| -> Parameter {
                match parameter {
                    sql::Parameter::Text(text) => Box::new(codec::storable(text).into_owned()),
                    sql::Parameter::Integer(integer) => Box::new(integer),
                }
            })
            .collect();
        Self {
            sql: select.sql,
            parameters,
        }
    }

    /// The parameters as the client takes them.
    pub(crate) fn parameters(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.parameters
            .iter()
            .map(|parameter| parameter.as_ref() as &(dyn ToSql + Sync))
            .collect()
    }
}
