//! How an [`AuditRecord`] becomes a row and back, column by column.
//!
//! The encodings are chosen so that a record reads back exactly as it was appended, and so that
//! the columns mean something to anyone opening the file with `sqlite3`:
//!
//! - `timestamp_ns`: integer nanoseconds since the Unix epoch (UTC). Exact for every instant
//!   from 1677 to 2262; an instant outside that range (never produced by a clock) is clamped to
//!   it rather than failing the whole batch it arrived in.
//! - `input_hash`, `output_hash`: the 32 raw bytes of the BLAKE3 digest (`hex(input_hash)` in
//!   SQL gives the hex form the CLI prints).
//! - `outcome`: `ok` or the error kind's stable snake_case name; `category` and `initiator`:
//!   their stable names too. All three parse back through `FromStr`, and an unknown name reads
//!   as a corrupt record, never as a default.
//! - `duration_us`: the microseconds, stored as SQLite's signed 64-bit integer (durations past
//!   2^63 µs, some 292,000 years, would read back unchanged but show as negative in SQL).
//! - `tool_key`, `org_key`: the tool's and the org's keys in `audit_tools` and `audit_orgs`
//!   (`dictionary`); a read looks the names up again. `org_key` is `NULL` when the record has
//!   no org. Every other text field is stored as is.
//!
//! A batch's first row is written with the id the writer assigned it; the rest take the next
//! ids from SQLite (a row without an id gets the table's largest id plus one), and the writer
//! checks, before committing, that the last of them got the batch's last id. Rows are bound
//! parameter by parameter, [`ROWS_PER_INSERT`] rows per statement when the batch has that
//! many: a few hundred nanoseconds per record matter at the writer's rates. Measured with
//! `callgrind`: one statement run per row cost about 12% more instructions per record (each run
//! starts the statement, opens the table's and the index's cursors, and finishes); with
//! explicit ids a multi-row insert runs in a statement journal (SQLite counts an explicit id as
//! something that may abort the statement midway), which cost another 10%. The rows without
//! ids are inserted `OR ROLLBACK` for the same reason: a failed constraint rolls back the whole
//! batch, as any error in it does anyway.

use std::{str::FromStr, sync::Arc};

use jiff::Timestamp;
use rusqlite::{Statement, types::Type};
use switchboard_audit::{ActionEvent, AuditAction, AuditRecord, Digest, Outcome};
use switchboard_core::{ActionId, Category, CorrelationId, Initiator, OrgId, SessionId, UserId};

/// The columns [`read`] reads, in its order, from `audit_records r`: the record's own columns,
/// with the tool's and the org's names looked up in their dictionaries.
pub(crate) const COLUMNS: &str = "r.id, r.timestamp_ns, \
     (SELECT name FROM audit_tools WHERE key = r.tool_key), r.domain, r.category, \
     (SELECT name FROM audit_orgs WHERE key = r.org_key), r.user_id, r.session_id, \
     r.correlation_id, r.initiator, r.input_hash, r.output_hash, r.duration_us, r.outcome, \
     r.action_id, r.action_event";

/// How many rows one multi-row insert writes. Measured with `callgrind` on batches of 1,024,
/// instructions per record (explicit ids): 1 row 16,364, 8 rows 14,574, 16 rows 14,788, 24
/// rows 15,675, 32 rows about 17,500.
pub(crate) const ROWS_PER_INSERT: usize = 8;

/// A row's columns after its id, in the order [`bind_fields`] binds them.
const FIELDS: &str = "timestamp_ns, tool_key, domain, category, org_key, user_id, session_id, \
     correlation_id, initiator, input_hash, output_hash, duration_us, outcome, action_id, \
     action_event";

/// The parameters [`bind_fields`] binds per row.
const FIELDS_PER_ROW: usize = 15;

/// Inserts a batch's first record with the id the writer assigned it ([`bind_first`]).
pub(crate) fn insert_first_sql() -> String {
    format!(
        "INSERT INTO audit_records (id, {FIELDS}) VALUES (?{})",
        ", ?".repeat(FIELDS_PER_ROW)
    )
}

/// Inserts `rows` records (at least one) after a batch's first; each takes the next id
/// ([`bind_next`]).
pub(crate) fn insert_next_sql(rows: usize) -> String {
    let row = format!("(?{})", ", ?".repeat(FIELDS_PER_ROW - 1));
    let rows = vec![row; rows.max(1)].join(", ");
    format!("INSERT OR ROLLBACK INTO audit_records ({FIELDS}) VALUES {rows}")
}

/// A timestamp as integer nanoseconds, clamped to what an `INTEGER` holds.
pub(crate) fn timestamp_to_sql(timestamp: Timestamp) -> i64 {
    let nanoseconds = timestamp.as_nanosecond();
    i64::try_from(nanoseconds).unwrap_or(if nanoseconds < 0 { i64::MIN } else { i64::MAX })
}

/// An id as SQLite's signed rowid (ids never exceed `i64::MAX`).
pub(crate) fn id_to_sql(id: u64) -> i64 {
    i64::try_from(id).unwrap_or(i64::MAX)
}

/// A record's row as [`bind_first`] and [`bind_next`] take it: the record, and what the writer worked out for it.
pub(crate) struct Row<'record> {
    /// The id the writer assigned (bound for a batch's first row; the others take it from
    /// SQLite, and the writer checks they did).
    pub(crate) id: i64,
    /// The record's timestamp, already converted with [`timestamp_to_sql`].
    pub(crate) timestamp_ns: i64,
    /// The tool's dictionary key.
    pub(crate) tool_key: i64,
    /// The org's dictionary key, if the record has an org.
    pub(crate) org_key: Option<i64>,
    /// The record itself.
    pub(crate) record: &'record AuditRecord,
}

/// Binds `row`, with its id, to a statement from [`insert_first_sql`].
pub(crate) fn bind_first(insert: &mut Statement<'_>, row: &Row<'_>) -> rusqlite::Result<()> {
    insert.raw_bind_parameter(1, row.id)?;
    bind_fields(insert, 1, row)
}

/// Binds `row`, without its id, as the row at `position` (from 0) of a statement from
/// [`insert_next_sql`]; the caller runs the statement once every row is bound.
pub(crate) fn bind_next(
    insert: &mut Statement<'_>,
    position: usize,
    row: &Row<'_>,
) -> rusqlite::Result<()> {
    bind_fields(insert, position * FIELDS_PER_ROW, row)
}

/// Binds the columns of `row` after its id to the parameters after the first `before`.
fn bind_fields(insert: &mut Statement<'_>, before: usize, row: &Row<'_>) -> rusqlite::Result<()> {
    let record = row.record;
    let at = before;
    insert.raw_bind_parameter(at + 1, row.timestamp_ns)?;
    insert.raw_bind_parameter(at + 2, row.tool_key)?;
    insert.raw_bind_parameter(at + 3, record.domain.as_deref())?;
    insert.raw_bind_parameter(at + 4, record.category.map(Category::as_str))?;
    insert.raw_bind_parameter(at + 5, row.org_key)?;
    insert.raw_bind_parameter(at + 6, record.user_id.as_ref().map(UserId::as_str))?;
    insert.raw_bind_parameter(at + 7, record.session_id.as_ref().map(SessionId::as_str))?;
    insert.raw_bind_parameter(
        at + 8,
        record.correlation_id.as_ref().map(CorrelationId::as_str),
    )?;
    insert.raw_bind_parameter(at + 9, record.initiator.as_str())?;
    // The column is NOT NULL: a record without an input digest is refused by the insert.
    insert.raw_bind_parameter(
        at + 10,
        record.input_hash.as_ref().map(|digest| &digest.0[..]),
    )?;
    insert.raw_bind_parameter(
        at + 11,
        record.output_hash.as_ref().map(|digest| &digest.0[..]),
    )?;
    // A bit-for-bit cast: see the module docs.
    insert.raw_bind_parameter(at + 12, record.duration_us as i64)?;
    insert.raw_bind_parameter(at + 13, record.outcome.as_str())?;
    insert.raw_bind_parameter(
        at + 14,
        record.action.as_ref().map(|action| action.id.as_str()),
    )?;
    insert.raw_bind_parameter(
        at + 15,
        record.action.as_ref().map(|action| action.event.as_str()),
    )?;
    Ok(())
}

/// Reads a row of `SELECT {COLUMNS}` back into a record.
pub(crate) fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<AuditRecord> {
    let id: i64 = row.get(0)?;
    let timestamp_ns: i64 = row.get(1)?;
    let timestamp = Timestamp::from_nanosecond(i128::from(timestamp_ns))
        .map_err(|error| invalid(1, Type::Integer, error))?;
    let duration: i64 = row.get(12)?;
    Ok(AuditRecord {
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
            .ok_or_else(|| invalid(9, Type::Null, "the initiator is missing"))?,
        input_hash: Some(Digest(row.get(10)?)),
        output_hash: row.get::<_, Option<[u8; 32]>>(11)?.map(Digest),
        digest_error: None,
        duration_us: duration as u64,
        outcome: parsed::<Outcome>(row, 13)?
            .ok_or_else(|| invalid(13, Type::Null, "the outcome is missing"))?,
        action: match (
            row.get_ref(14)?.as_str_or_null()?,
            parsed::<ActionEvent>(row, 15)?,
        ) {
            (Some(id), Some(event)) => Some(AuditAction::new(ActionId::from(id), event)),
            (None, None) => None,
            _ => {
                return Err(invalid(
                    14,
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
                .map_err(|error| invalid(index, Type::Text, error.to_string()))
        })
        .transpose()
}

/// A column whose value this build cannot read back.
fn invalid(
    index: usize,
    kind: Type,
    error: impl Into<Box<dyn std::error::Error + Send + Sync>>,
) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(index, kind, error.into())
}
