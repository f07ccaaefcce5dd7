//! Running a query on a reader connection: resolve its names and time range, plan it
//! (`select`), and read the records, all in one read transaction, so every statement sees the
//! same snapshot of the last commit.

use rusqlite::{Connection, params_from_iter};
use switchboard_audit::{AuditQuery, AuditRecord};

use crate::{
    codec,
    dictionary::{self, Table},
    postings,
    select::{self, Plan, Resolved, Select},
    time_bounds,
};

/// The records matching `query`, newest first.
pub(crate) fn run(
    connection: &Connection,
    query: &AuditQuery,
) -> rusqlite::Result<Vec<AuditRecord>> {
    if query.limit == Some(0) {
        return Ok(Vec::new());
    }
    let transaction = connection.unchecked_transaction()?;
    let Some(resolved) = resolve(&transaction, query)? else {
        return Ok(Vec::new());
    };
    let records = match select::plan(query, &resolved) {
        Plan::Records(select) => transaction
            .prepare_cached(&select.sql)?
            .query_map(params_from_iter(&select.parameters), codec::read)?
            .collect::<rusqlite::Result<_>>()?,
        Plan::Postings {
            postings,
            fetch,
            before_id,
            highest_id,
            limit,
        } => {
            let walk = Walk {
                before_id,
                highest_id,
                limit: limit.unwrap_or(usize::MAX),
            };
            walk.run(&transaction, &postings, &fetch)?
        }
    };
    transaction.commit()?;
    Ok(records)
}

/// The query's names as keys and its time range as ids; `None` when that alone shows nothing
/// matches (an org or tool never seen, a range no record can be in).
fn resolve(connection: &Connection, query: &AuditQuery) -> rusqlite::Result<Option<Resolved>> {
    let mut resolved = Resolved::default();
    if let Some(tool) = &query.tool {
        match dictionary::find(connection, Table::Tools, tool)? {
            Some(key) => resolved.tool_key = Some(key),
            None => return Ok(None),
        }
    }
    if let Some(org_id) = &query.org_id {
        match dictionary::find(connection, Table::Orgs, org_id.as_str())? {
            Some(key) => resolved.org_key = Some(key),
            None => return Ok(None),
        }
    }
    if let Some(since) = query.since {
        match time_bounds::lowest_id_since(connection, codec::timestamp_to_sql(since))? {
            Some(id) => resolved.lowest_id = Some(id),
            None => return Ok(None),
        }
    }
    if let Some(until) = query.until {
        match time_bounds::highest_id_before(connection, codec::timestamp_to_sql(until))? {
            Some(id) => resolved.highest_id = Some(id),
            None => return Ok(None),
        }
    }
    Ok(Some(resolved))
}

/// Walking postings: which ids to skip, and when to stop.
struct Walk {
    before_id: Option<i64>,
    highest_id: Option<i64>,
    limit: usize,
}

impl Walk {
    fn run(
        &self,
        connection: &Connection,
        postings: &Select,
        fetch: &Select,
    ) -> rusqlite::Result<Vec<AuditRecord>> {
        let mut records = Vec::new();
        let mut fetch_statement = connection.prepare_cached(&fetch.sql)?;
        for (index, parameter) in fetch.parameters.iter().enumerate() {
            fetch_statement.raw_bind_parameter(index + 2, parameter)?;
        }
        let mut postings_statement = connection.prepare_cached(&postings.sql)?;
        let mut rows = postings_statement.query(params_from_iter(&postings.parameters))?;
        while let Some(row) = rows.next()? {
            let first_id: i64 = row.get(0)?;
            for offset in postings::offsets(row.get_ref(1)?.as_str()?, 1)? {
                let id = first_id + offset;
                if self.before_id.is_some_and(|before| id >= before)
                    || self.highest_id.is_some_and(|highest| id > highest)
                {
                    continue;
                }
                fetch_statement.raw_bind_parameter(1, id)?;
                let mut found = fetch_statement.raw_query();
                // Retention may have deleted it, or another filter rejects it.
                if let Some(record) = found.next()? {
                    records.push(codec::read(record)?);
                    if records.len() >= self.limit {
                        return Ok(records);
                    }
                }
            }
        }
        Ok(records)
    }
}
