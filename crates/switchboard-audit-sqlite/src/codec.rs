//! How an [`AuditRecord`] becomes a row of `audit_records` and back, column by column.
//!
//! The encodings are chosen so that a record reads back exactly as it was appended, and so that
//! the columns mean something to anyone opening the file with `sqlite3`:
//!
//! - `timestamp_ns`: integer nanoseconds since the Unix epoch (UTC). Exact for every instant
//!   from 1677 to 2262; an instant outside that range (never produced by a clock) is clamped to
//!   it rather than failing the whole batch it arrived in.
//! - `input_hash`, `output_hash`: the 32 raw bytes of the BLAKE3 digest (`hex(input_hash)` in
//!   SQL gives the hex form the CLI prints), `NULL` when the record has none; `digest_error`
//!   says why one is missing.
//! - `outcome`: `ok` or the error kind's stable snake_case name; `category`, `initiator` and
//!   `action_event`: their stable names too. All of them parse back through `FromStr`, and an
//!   unknown name reads as a corrupt record, never as a default.
//! - `duration_us`: the microseconds, stored as SQLite's signed 64-bit integer (durations past
//!   2^63 µs, some 292,000 years, read back unchanged but show as negative in SQL).
//! - `asks`: the questions the call asked the client, as one JSON array
//!   (`switchboard_audit::sql::asks_to_sql`), `NULL` when it asked none: the record that asked
//!   nothing, almost every one, costs no serialisation and one byte of its row.
//! - `switch`: what a switch of tools did, in that switch's record, as one JSON object
//!   (`switchboard_audit::sql::switch_to_sql`), `NULL` in a call's record.
//! - Every other field is its text as is, `NULL` when absent.

use std::{str::FromStr, sync::Arc};

use rusqlite::{Statement, types::Type};
use switchboard_audit::{
    ActionEvent, AuditAction, AuditRecord, Digest, Outcome,
    sql::{asks_from_sql, asks_to_sql, switch_from_sql, switch_to_sql},
};
use switchboard_core::{ActionId, Category, CorrelationId, Initiator, OrgId, SessionId, UserId};
use switchboard_sqlite::{invalid_column, timestamp_from_sql, timestamp_to_sql};

/// The columns [`read`] reads, in its order.
pub(crate) const COLUMNS: &str = "id, timestamp_ns, tool, domain, category, org_id, user_id, \
     session_id, correlation_id, initiator, input_hash, output_hash, digest_error, duration_us, \
     outcome, action_id, action_event, node, asks, switch";

/// Inserts one record; SQLite gives it the next id. [`bind`] binds its parameters.
pub(crate) const INSERT: &str = "INSERT INTO audit_records (timestamp_ns, tool, domain, \
     category, org_id, user_id, session_id, correlation_id, initiator, input_hash, output_hash, \
     digest_error, duration_us, outcome, action_id, action_event, node, asks, switch) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, \
     ?19)";

/// Binds `record`'s fields to the parameters of [`INSERT`].
pub(crate) fn bind(insert: &mut Statement<'_>, record: &AuditRecord) -> rusqlite::Result<()> {
    insert.raw_bind_parameter(1, timestamp_to_sql(record.timestamp))?;
    insert.raw_bind_parameter(2, &*record.tool)?;
    insert.raw_bind_parameter(3, record.domain.as_deref())?;
    insert.raw_bind_parameter(4, record.category.map(Category::as_str))?;
    insert.raw_bind_parameter(5, record.org_id.as_ref().map(OrgId::as_str))?;
    insert.raw_bind_parameter(6, record.user_id.as_ref().map(UserId::as_str))?;
    insert.raw_bind_parameter(7, record.session_id.as_ref().map(SessionId::as_str))?;
    insert.raw_bind_parameter(8, record.correlation_id.as_ref().map(CorrelationId::as_str))?;
    insert.raw_bind_parameter(9, record.initiator.as_str())?;
    insert.raw_bind_parameter(10, record.input_hash.as_ref().map(|digest| &digest.0[..]))?;
    insert.raw_bind_parameter(11, record.output_hash.as_ref().map(|digest| &digest.0[..]))?;
    insert.raw_bind_parameter(12, record.digest_error.as_deref())?;
    // A bit-for-bit cast: see the module docs.
    insert.raw_bind_parameter(13, record.duration_us as i64)?;
    insert.raw_bind_parameter(14, record.outcome.as_str())?;
    insert.raw_bind_parameter(15, record.action.as_ref().map(|action| action.id.as_str()))?;
    insert.raw_bind_parameter(
        16,
        record.action.as_ref().map(|action| action.event.as_str()),
    )?;
    insert.raw_bind_parameter(17, record.node.as_deref())?;
    let asks = asks_to_sql(&record.asks)
        .map_err(|error| rusqlite::Error::ToSqlConversionFailure(Box::new(error)))?;
    insert.raw_bind_parameter(18, asks)?;
    let switch = switch_to_sql(record.switch.as_ref())
        .map_err(|error| rusqlite::Error::ToSqlConversionFailure(Box::new(error)))?;
    insert.raw_bind_parameter(19, switch)?;
    Ok(())
}

/// Reads a row of `SELECT {COLUMNS}` back into a record.
pub(crate) fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<AuditRecord> {
    let id: i64 = row.get(0)?;
    let timestamp = timestamp_from_sql(1, row.get(1)?)?;
    let duration: i64 = row.get(13)?;
    Ok(AuditRecord {
        asks: asks_from_sql(row.get_ref(18)?.as_str_or_null()?)
            .map_err(|error| invalid_column(18, Type::Text, error))?,
        switch: switch_from_sql(row.get_ref(19)?.as_str_or_null()?)
            .map_err(|error| invalid_column(19, Type::Text, error))?,
        node: row.get_ref(17)?.as_str_or_null()?.map(Arc::from),
        id: id.unsigned_abs(),
        timestamp,
        tool: Arc::from(row.get_ref(2)?.as_str()?),
        domain: row.get_ref(3)?.as_str_or_null()?.map(Arc::from),
        category: parsed::<Category>(row, 4)?,
        org_id: row.get_ref(5)?.as_str_or_null()?.map(OrgId::from),
        user_id: row.get_ref(6)?.as_str_or_null()?.map(UserId::from),
        session_id: row.get_ref(7)?.as_str_or_null()?.map(SessionId::from),
        correlation_id: row.get_ref(8)?.as_str_or_null()?.map(CorrelationId::from),
        initiator: parsed::<Initiator>(row, 9)?
            .ok_or_else(|| invalid_column(9, Type::Null, "the initiator is missing"))?,
        input_hash: row.get::<_, Option<[u8; 32]>>(10)?.map(Digest),
        output_hash: row.get::<_, Option<[u8; 32]>>(11)?.map(Digest),
        digest_error: row.get(12)?,
        duration_us: duration as u64,
        outcome: parsed::<Outcome>(row, 14)?
            .ok_or_else(|| invalid_column(14, Type::Null, "the outcome is missing"))?,
        action: match (
            row.get_ref(15)?.as_str_or_null()?,
            parsed::<ActionEvent>(row, 16)?,
        ) {
            (Some(id), Some(event)) => Some(AuditAction::new(ActionId::from(id), event)),
            (None, None) => None,
            _ => {
                return Err(invalid_column(
                    15,
                    Type::Text,
                    "an action needs both its id and its event",
                ));
            }
        },
    })
}

/// A nullable text column parsed with `FromStr`; an unknown name is an error, never a default.
fn parsed<T>(row: &rusqlite::Row<'_>, index: usize) -> rusqlite::Result<Option<T>>
where
    T: FromStr,
    T::Err: std::fmt::Display,
{
    row.get_ref(index)?
        .as_str_or_null()?
        .map(|text| {
            text.parse::<T>()
                .map_err(|error| invalid_column(index, Type::Text, error.to_string()))
        })
        .transpose()
}
