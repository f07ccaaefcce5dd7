//! An [`AuditQuery`] as a plan: which structure finds the records, and the SQL that reads
//! them, newest first, with every value bound as a parameter (never spliced into the text).
//!
//! The structure that drives a query, by the first filter set in this order:
//!
//! 1. correlation id: the `audit_records_by_correlation` index, whose entries end with the id,
//!    so `ORDER BY id DESC LIMIT n` reads n index entries and no more;
//! 2. org, then tool, then outcome: that key's postings (see `postings`), newest batch first,
//!    each listed record read by id;
//! 3. otherwise the table itself, by id, newest first.
//!
//! Every other filter that is set is a condition on the records read, including the ones that
//! picked the driver: a posting only decides which records are read, a record is returned only
//! if it matches, so an org-scoped query cannot return another org's record even if a posting
//! were wrong. A time range adds an id range (`time_bounds`) as well as its exact condition.
//! Every comparison is exact under SQLite's binary collation: an org id matches itself only,
//! never a prefix, a pattern or another case.
//!
//! The statement texts depend only on which filters are set, so the prepared-statement cache
//! holds at most a few statements per combination in use.

use rusqlite::types::Value;
use switchboard_audit::AuditQuery;

use crate::codec::{COLUMNS, id_to_sql, timestamp_to_sql};

/// What a query needs from the database before it can be planned: its names as dictionary
/// keys, and its time range as an id range. The caller answers "nothing" without planning when
/// a name has no key or a time bound excludes every id.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// The key of the query's tool, if it filters on one.
    pub(crate) tool_key: Option<i64>,
    /// The key of the query's org, if it filters on one.
    pub(crate) org_key: Option<i64>,
    /// The lowest id a record matching `since` can have.
    pub(crate) lowest_id: Option<i64>,
    /// The highest id a record matching `until` can have.
    pub(crate) highest_id: Option<i64>,
}

/// A statement and its parameters, in order.
#[derive(Debug, PartialEq)]
pub(crate) struct Select {
    pub(crate) sql: String,
    pub(crate) parameters: Vec<Value>,
}

/// How to answer a query.
#[derive(Debug, PartialEq)]
pub(crate) enum Plan {
    /// One `SELECT` of records, newest first.
    Records(Select),
    /// Walk `postings` (rows of `first_id, offsets`, newest batch first) and read each record
    /// they list with `fetch`, whose first parameter is the id (the others follow it).
    Postings {
        postings: Select,
        fetch: Select,
        /// Only ids below this (the cursor).
        before_id: Option<i64>,
        /// Only ids up to this (the time range's bound).
        highest_id: Option<i64>,
        /// At most this many records.
        limit: Option<usize>,
    },
}

/// The postings table a query walks, and its key.
enum Postings {
    Org(i64),
    Tool(i64),
    Outcome(&'static str),
}

/// The conditions on `audit_records r`, and their parameters.
#[derive(Default)]
struct Conditions {
    conditions: Vec<&'static str>,
    parameters: Vec<Value>,
}

impl Conditions {
    fn add(&mut self, condition: &'static str, value: Option<Value>) {
        if let Some(value) = value {
            self.conditions.push(condition);
            self.parameters.push(value);
        }
    }

    /// `query`'s conditions on a record.
    fn of(query: &AuditQuery, resolved: &Resolved) -> Self {
        let text = |value: Option<&str>| value.map(|value| Value::Text(value.to_owned()));
        let mut conditions = Conditions::default();
        conditions.add(
            "r.correlation_id = ?",
            text(query.correlation_id.as_ref().map(|id| id.as_str())),
        );
        conditions.add("r.org_key = ?", resolved.org_key.map(Value::Integer));
        conditions.add("r.tool_key = ?", resolved.tool_key.map(Value::Integer));
        conditions.add(
            "r.user_id = ?",
            text(query.user_id.as_ref().map(|id| id.as_str())),
        );
        conditions.add(
            "r.outcome = ?",
            text(query.outcome.map(|outcome| outcome.as_str())),
        );
        conditions.add(
            "r.timestamp_ns >= ?",
            query
                .since
                .map(|since| Value::Integer(timestamp_to_sql(since))),
        );
        conditions.add(
            "r.timestamp_ns < ?",
            query
                .until
                .map(|until| Value::Integer(timestamp_to_sql(until))),
        );
        conditions.add("r.id >= ?", resolved.lowest_id.map(Value::Integer));
        conditions.add("r.id <= ?", resolved.highest_id.map(Value::Integer));
        conditions.add(
            "r.id < ?",
            query.before_id.map(|id| Value::Integer(id_to_sql(id))),
        );
        conditions
    }

    /// ` WHERE a AND b`, after `first` if any; empty when there is no condition at all.
    fn clause(&self, first: Option<&str>) -> String {
        let all: Vec<&str> = first
            .into_iter()
            .chain(self.conditions.iter().copied())
            .collect();
        if all.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", all.join(" AND "))
        }
    }
}

/// The plan that answers `query`, given what was `resolved` for it.
pub(crate) fn plan(query: &AuditQuery, resolved: &Resolved) -> Plan {
    let conditions = Conditions::of(query, resolved);
    let postings = if query.correlation_id.is_some() {
        None
    } else if let Some(org_key) = resolved.org_key {
        Some(Postings::Org(org_key))
    } else if let Some(tool_key) = resolved.tool_key {
        Some(Postings::Tool(tool_key))
    } else {
        query
            .outcome
            .map(|outcome| Postings::Outcome(outcome.as_str()))
    };
    let Some(postings) = postings else {
        let mut sql = format!(
            "SELECT {COLUMNS} FROM audit_records r{} ORDER BY r.id DESC",
            conditions.clause(None)
        );
        let mut parameters = conditions.parameters;
        if let Some(limit) = query.limit {
            sql.push_str(" LIMIT ?");
            parameters.push(Value::Integer(i64::try_from(limit).unwrap_or(i64::MAX)));
        }
        return Plan::Records(Select { sql, parameters });
    };
    let (table, key_column, key) = match postings {
        Postings::Org(key) => ("audit_org_postings", "org_key", Value::Integer(key)),
        Postings::Tool(key) => ("audit_tool_postings", "tool_key", Value::Integer(key)),
        Postings::Outcome(outcome) => (
            "audit_outcome_postings",
            "outcome",
            Value::Text(outcome.to_owned()),
        ),
    };
    // A posting lists ids from its `first_id` up, within its batch; batches do not overlap, so
    // a batch starting at or past the cursor, before the lowest id or after the highest id
    // holds nothing the query wants.
    let mut batch = Conditions::default();
    batch.add(
        "first_id < ?",
        query.before_id.map(|id| Value::Integer(id_to_sql(id))),
    );
    batch.add("first_id >= ?", resolved.lowest_id.map(Value::Integer));
    batch.add("first_id <= ?", resolved.highest_id.map(Value::Integer));
    let mut postings_parameters = vec![key];
    postings_parameters.extend(batch.parameters.iter().cloned());
    let mut postings_sql = format!("SELECT first_id, offsets FROM {table} WHERE {key_column} = ?");
    for condition in &batch.conditions {
        postings_sql.push_str(" AND ");
        postings_sql.push_str(condition);
    }
    postings_sql.push_str(" ORDER BY first_id DESC");
    Plan::Postings {
        postings: Select {
            sql: postings_sql,
            parameters: postings_parameters,
        },
        fetch: Select {
            sql: format!(
                "SELECT {COLUMNS} FROM audit_records r{}",
                conditions.clause(Some("r.id = ?"))
            ),
            parameters: conditions.parameters,
        },
        before_id: query.before_id.map(id_to_sql),
        highest_id: resolved.highest_id,
        limit: query.limit,
    }
}

#[cfg(test)]
mod tests;
