//! How an [`AuditRecord`] becomes a row of `audit_records` and back, column by column, and how a
//! batch becomes the arrays of one `INSERT … SELECT FROM unnest(…)`.
//!
//! The encodings are the SQLite store's, so that a record reads back exactly as it was appended
//! and a row means the same in `psql` as in `sqlite3`:
//!
//! - `timestamp_ns`: `BIGINT` nanoseconds since the Unix epoch (UTC). Exact for every instant
//!   from 1677 to 2262; an instant outside that range (never produced by a clock) is clamped to
//!   it rather than failing the whole batch it arrived in.
//! - `input_hash`, `output_hash`: the 32 raw bytes of the BLAKE3 digest (`encode(input_hash,
//!   'hex')` in SQL gives the hex form the CLI prints), `NULL` when the record has none;
//!   `digest_error` says why one is missing.
//! - `outcome`: `ok` or the error kind's stable snake_case name; `category`, `initiator` and
//!   `action_event`: their stable names too. All of them parse back through `FromStr`, and an
//!   unknown name reads as a corrupt record, never as a default.
//! - `duration_us`: the microseconds as a signed `BIGINT`, bit for bit (durations past 2^63 µs,
//!   some 292,000 years, read back unchanged but show as negative in SQL).
//! - `asks`: the questions the call asked the client, as one JSON array in a `TEXT` column
//!   (`switchboard_audit::sql::asks_to_sql`, the SQLite store's text; `asks::jsonb` in SQL to
//!   look inside), `NULL` when it asked none: the record that asked nothing, almost every one,
//!   costs no serialisation. JSON text writes a NUL as the escape `\u0000`, which `TEXT` holds
//!   (a `jsonb` column would refuse it, and with it the batch).
//! - `switch`: what a switch of tools did, in that switch's record, as one JSON object in a
//!   `TEXT` column (`switchboard_audit::sql::switch_to_sql`, the SQLite store's text), `NULL`
//!   in a call's record.
//! - Every other field is its text as is, `NULL` when absent, except for one character:
//!   PostgreSQL's `TEXT` cannot hold U+0000, so a NUL in a caller-supplied value (a tool name,
//!   a correlation id) is stored as U+FFFD, the replacement character, rather than failing the
//!   whole batch. Queries make the same replacement in their filters, so they still match.

use std::{borrow::Cow, str::FromStr, sync::Arc};

use jiff::Timestamp;
use switchboard_audit::{
    ActionEvent, AuditAction, AuditRecord, Digest, Outcome,
    sql::{asks_from_sql, asks_to_sql, switch_from_sql, switch_to_sql},
};
use switchboard_core::{ActionId, Category, CorrelationId, Initiator, OrgId, SessionId, UserId};
use switchboard_postgres::{
    QueryError,
    tokio_postgres::{Row, types::ToSql},
};

/// The columns [`read`] reads, in its order.
pub(crate) const COLUMNS: &str = "id, timestamp_ns, tool, domain, category, org_id, user_id, \
     session_id, correlation_id, initiator, input_hash, output_hash, digest_error, duration_us, \
     outcome, action_id, action_event, node, asks, switch";

/// Inserts a whole batch in one statement, from one array per column ([`Columns`]) and the
/// batch's key (`$20`, a [`BatchKey`](switchboard_audit::BatchKey) as text), and returns the ids
/// the identity gave the rows, ascending, as one array. The rows are inserted in the arrays'
/// order (`ORDER BY` the position `WITH ORDINALITY` numbers them by, which the function scan
/// yields already in order) and the identity's sequence only grows, so the ids ascending are
/// the records' ids in batch order. The second column says whether this statement inserted them.
///
/// The key and the ids go into `audit_batches` in the same statement, so in the same
/// transaction. When the key is there already (an earlier attempt at this batch committed,
/// though its caller stopped waiting), nothing is inserted and the ids stored then come back.
/// Two attempts at one key that overlap (the first still running on the server) cannot both
/// commit: the second waits on the first's key, then fails with a unique violation, and
/// everything it inserted is rolled back; its retry reads the ids back.
pub(crate) const INSERT_BATCH: &str = "WITH known AS (\
     SELECT ids FROM audit_batches WHERE batch_key = CAST($20::text AS uuid)), \
     inserted AS (\
     INSERT INTO audit_records (timestamp_ns, tool, domain, category, org_id, user_id, \
     session_id, correlation_id, initiator, input_hash, output_hash, digest_error, duration_us, \
     outcome, action_id, action_event, node, asks, switch) \
     SELECT batch.timestamp_ns, batch.tool, batch.domain, batch.category, batch.org_id, \
     batch.user_id, batch.session_id, batch.correlation_id, batch.initiator, batch.input_hash, \
     batch.output_hash, batch.digest_error, batch.duration_us, batch.outcome, batch.action_id, \
     batch.action_event, batch.node, batch.asks, batch.switch \
     FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], \
     $7::text[], $8::text[], $9::text[], $10::bytea[], $11::bytea[], $12::text[], \
     $13::bigint[], $14::text[], $15::text[], $16::text[], $17::text[], $18::text[], \
     $19::text[]) \
     WITH ORDINALITY AS \
     batch (timestamp_ns, tool, domain, category, org_id, user_id, session_id, correlation_id, \
     initiator, input_hash, output_hash, digest_error, duration_us, outcome, action_id, \
     action_event, node, asks, switch, position) \
     WHERE NOT EXISTS (SELECT 1 FROM known) \
     ORDER BY batch.position \
     RETURNING id), \
     kept AS (\
     INSERT INTO audit_batches (batch_key, ids) \
     SELECT CAST($20::text AS uuid), array_agg(id ORDER BY id) FROM inserted \
     HAVING NOT EXISTS (SELECT 1 FROM known) \
     RETURNING ids) \
     SELECT ids, true FROM kept UNION ALL SELECT ids, false FROM known";

/// A batch as one array per column of [`INSERT_BATCH`], borrowing the records' text.
#[derive(Debug, Default)]
pub(crate) struct Columns<'batch> {
    timestamp_ns: Vec<i64>,
    tool: Vec<Cow<'batch, str>>,
    domain: Vec<Option<Cow<'batch, str>>>,
    category: Vec<Option<&'static str>>,
    org_id: Vec<Option<Cow<'batch, str>>>,
    user_id: Vec<Option<Cow<'batch, str>>>,
    session_id: Vec<Option<Cow<'batch, str>>>,
    correlation_id: Vec<Option<Cow<'batch, str>>>,
    initiator: Vec<&'static str>,
    input_hash: Vec<Option<&'batch [u8]>>,
    output_hash: Vec<Option<&'batch [u8]>>,
    digest_error: Vec<Option<Cow<'batch, str>>>,
    duration_us: Vec<i64>,
    outcome: Vec<&'static str>,
    action_id: Vec<Option<Cow<'batch, str>>>,
    action_event: Vec<Option<&'static str>>,
    node: Vec<Option<Cow<'batch, str>>>,
    asks: Vec<Option<String>>,
    switch: Vec<Option<String>>,
}

impl<'batch> Columns<'batch> {
    /// The columns of `records`, in order, with `json`, their [`json_columns`].
    pub(crate) fn of(records: &'batch [AuditRecord], json: JsonColumns) -> Self {
        let mut columns = Self::default();
        for record in records {
            columns.push(record);
        }
        columns.asks = json.asks;
        columns.switch = json.switch;
        columns
    }

    fn push(&mut self, record: &'batch AuditRecord) {
        fn text(value: Option<&str>) -> Option<Cow<'_, str>> {
            value.map(storable)
        }
        self.timestamp_ns.push(timestamp_to_sql(record.timestamp));
        self.tool.push(storable(&record.tool));
        self.domain.push(text(record.domain.as_deref()));
        self.category.push(record.category.map(Category::as_str));
        self.org_id
            .push(text(record.org_id.as_ref().map(OrgId::as_str)));
        self.user_id
            .push(text(record.user_id.as_ref().map(UserId::as_str)));
        self.session_id
            .push(text(record.session_id.as_ref().map(SessionId::as_str)));
        self.correlation_id.push(text(
            record.correlation_id.as_ref().map(CorrelationId::as_str),
        ));
        self.initiator.push(record.initiator.as_str());
        self.input_hash
            .push(record.input_hash.as_ref().map(|digest| &digest.0[..]));
        self.output_hash
            .push(record.output_hash.as_ref().map(|digest| &digest.0[..]));
        self.digest_error.push(text(record.digest_error.as_deref()));
        // A bit-for-bit cast: see the module docs.
        self.duration_us.push(record.duration_us as i64);
        self.outcome.push(record.outcome.as_str());
        self.action_id.push(text(
            record.action.as_ref().map(|action| action.id.as_str()),
        ));
        self.action_event
            .push(record.action.as_ref().map(|action| action.event.as_str()));
        self.node.push(text(record.node.as_deref()));
    }

    /// The record parameters of [`INSERT_BATCH`], `$1` to `$19` (the key, `$20`, is the
    /// caller's).
    pub(crate) fn parameters(&self) -> [&(dyn ToSql + Sync); 19] {
        [
            &self.timestamp_ns,
            &self.tool,
            &self.domain,
            &self.category,
            &self.org_id,
            &self.user_id,
            &self.session_id,
            &self.correlation_id,
            &self.initiator,
            &self.input_hash,
            &self.output_hash,
            &self.digest_error,
            &self.duration_us,
            &self.outcome,
            &self.action_id,
            &self.action_event,
            &self.node,
            &self.asks,
            &self.switch,
        ]
    }
}

/// The JSON columns of a batch, one value per record, in order.
#[derive(Debug, Default)]
pub(crate) struct JsonColumns {
    /// `NULL` for a record that asked nothing, else its questions' JSON array.
    asks: Vec<Option<String>>,
    /// `NULL` in a call's record, else its switch's JSON object.
    switch: Vec<Option<String>>,
}

/// The `asks` and `switch` columns of each of `records`, in order. Written before the batch
/// goes to the database, as the only part of a batch's columns that can fail (it never does
/// for the questions and switches a registry notes).
pub(crate) fn json_columns(records: &[AuditRecord]) -> Result<JsonColumns, String> {
    let mut columns = JsonColumns::default();
    for record in records {
        columns
            .asks
            .push(asks_to_sql(&record.asks).map_err(|error| error.to_string())?);
        columns
            .switch
            .push(switch_to_sql(record.switch.as_ref()).map_err(|error| error.to_string())?);
    }
    Ok(columns)
}

/// `value` as `TEXT` can hold it, borrowed when it already can (see the module docs).
pub(crate) fn storable(value: &str) -> Cow<'_, str> {
    if value.contains('\0') {
        Cow::Owned(value.replace('\0', "\u{FFFD}"))
    } else {
        Cow::Borrowed(value)
    }
}

/// A timestamp as integer nanoseconds since the Unix epoch, clamped to what a `BIGINT` holds.
pub(crate) fn timestamp_to_sql(timestamp: Timestamp) -> i64 {
    let nanoseconds = timestamp.as_nanosecond();
    i64::try_from(nanoseconds).unwrap_or(if nanoseconds < 0 { i64::MIN } else { i64::MAX })
}

/// Integer nanoseconds back as a timestamp.
fn timestamp_from_sql(nanoseconds: i64) -> Result<Timestamp, QueryError> {
    Timestamp::from_nanosecond(i128::from(nanoseconds))
        .map_err(|error| QueryError::Decode(format!("timestamp_ns {nanoseconds}: {error}")))
}

/// Reads a row of `SELECT {COLUMNS}` back into a record.
pub(crate) fn read(row: &Row) -> Result<AuditRecord, QueryError> {
    let id: i64 = get(row, 0)?;
    let duration: i64 = get(row, 13)?;
    Ok(AuditRecord {
        asks: asks_from_sql(get::<Option<&str>>(row, 18)?)
            .map_err(|error| QueryError::Decode(format!("column asks: {error}")))?,
        switch: switch_from_sql(get::<Option<&str>>(row, 19)?)
            .map_err(|error| QueryError::Decode(format!("column switch: {error}")))?,
        node: get::<Option<&str>>(row, 17)?.map(Arc::from),
        id: id.unsigned_abs(),
        timestamp: timestamp_from_sql(get(row, 1)?)?,
        tool: Arc::from(get::<&str>(row, 2)?),
        domain: get::<Option<&str>>(row, 3)?.map(Arc::from),
        category: parsed::<Category>(row, 4)?,
        org_id: get::<Option<&str>>(row, 5)?.map(OrgId::from),
        user_id: get::<Option<&str>>(row, 6)?.map(UserId::from),
        session_id: get::<Option<&str>>(row, 7)?.map(SessionId::from),
        correlation_id: get::<Option<&str>>(row, 8)?.map(CorrelationId::from),
        initiator: required(parsed::<Initiator>(row, 9)?, row, 9)?,
        input_hash: digest(row, 10)?,
        output_hash: digest(row, 11)?,
        digest_error: get(row, 12)?,
        duration_us: duration as u64,
        outcome: required(parsed::<Outcome>(row, 14)?, row, 14)?,
        action: match (
            get::<Option<&str>>(row, 15)?,
            parsed::<ActionEvent>(row, 16)?,
        ) {
            (Some(id), Some(event)) => Some(AuditAction::new(ActionId::from(id), event)),
            (None, None) => None,
            _ => {
                return Err(QueryError::Decode(
                    "an audit record's action needs both its id and its event".to_owned(),
                ));
            }
        },
    })
}

/// Column `index` of `row` as a `T`; a type mismatch names the column.
fn get<'row, T>(row: &'row Row, index: usize) -> Result<T, QueryError>
where
    T: switchboard_postgres::tokio_postgres::types::FromSql<'row>,
{
    row.try_get(index)
        .map_err(|error| QueryError::Decode(format!("column {}: {error}", column_name(row, index))))
}

fn column_name(row: &Row, index: usize) -> &str {
    row.columns().get(index).map_or("?", |column| column.name())
}

/// A column that must not be `NULL`.
fn required<T>(value: Option<T>, row: &Row, index: usize) -> Result<T, QueryError> {
    value
        .ok_or_else(|| QueryError::Decode(format!("column {} is missing", column_name(row, index))))
}

/// A nullable digest column: 32 bytes or `NULL`.
fn digest(row: &Row, index: usize) -> Result<Option<Digest>, QueryError> {
    get::<Option<&[u8]>>(row, index)?
        .map(|bytes| {
            <[u8; 32]>::try_from(bytes).map(Digest).map_err(|_| {
                QueryError::Decode(format!(
                    "column {} holds {} bytes, not a 32-byte digest",
                    column_name(row, index),
                    bytes.len()
                ))
            })
        })
        .transpose()
}

/// A nullable text column parsed with `FromStr`; an unknown name is an error, never a default.
fn parsed<T>(row: &Row, index: usize) -> Result<Option<T>, QueryError>
where
    T: FromStr,
    T::Err: std::fmt::Display,
{
    get::<Option<&str>>(row, index)?
        .map(|text| {
            text.parse::<T>().map_err(|error| {
                QueryError::Decode(format!("column {}: {error}", column_name(row, index)))
            })
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_exact_nanoseconds_and_clamped_outside_a_bigint() {
        let exact = Timestamp::constant(1_795_000_000, 123_456_789);
        assert_eq!(timestamp_to_sql(exact), 1_795_000_000_123_456_789);
        assert_eq!(
            timestamp_from_sql(timestamp_to_sql(exact)).ok(),
            Some(exact)
        );
        assert_eq!(timestamp_to_sql(Timestamp::MAX), i64::MAX);
        assert_eq!(timestamp_to_sql(Timestamp::MIN), i64::MIN);
    }

    #[test]
    fn a_batch_is_one_array_per_column_in_record_order() {
        let record = |tool: &str, org: Option<&str>| AuditRecord {
            asks: Vec::new(),
            switch: None,
            node: None,
            id: 0,
            timestamp: Timestamp::constant(1_795_000_000, 0),
            tool: tool.into(),
            domain: None,
            category: Some(Category::Read),
            org_id: org.map(OrgId::from),
            user_id: None,
            session_id: None,
            correlation_id: None,
            initiator: Initiator::Agent,
            input_hash: Some(Digest([7; 32])),
            output_hash: None,
            digest_error: Some("output: not JSON".to_owned()),
            duration_us: u64::MAX,
            outcome: Outcome::Ok,
            action: None,
        };
        let asked = AuditRecord {
            asks: vec![switchboard_core::ask::AskRecord {
                kind: switchboard_core::ask::AskKind::Url,
                outcome: switchboard_core::ask::AskOutcome::Cancelled,
                error: None,
                request_hash: None,
                answer_hash: None,
                duration_us: 5,
            }],
            ..record("sec\0ond", None)
        };
        let switched = AuditRecord {
            switch: Some(switchboard_audit::SwitchRecord {
                action: switchboard_audit::SwitchAction::Enable,
                selector: "tag:beta".to_owned(),
                changed: Vec::new(),
            }),
            ..record(switchboard_audit::SWITCH_RECORD_TOOL, None)
        };
        let records = [record("first", Some("acme")), asked, switched];
        let json = json_columns(&records).expect("questions and switches are JSON");
        let columns = Columns::of(&records, json);
        assert_eq!(columns.tool, ["first", "sec\u{FFFD}ond", "registry.switch"]);
        assert_eq!(columns.org_id, [Some("acme".into()), None, None]);
        assert_eq!(columns.duration_us, [-1, -1, -1]);
        assert_eq!(columns.initiator, ["agent", "agent", "agent"]);
        assert_eq!(columns.input_hash[0], Some(&[7_u8; 32][..]));
        assert_eq!(
            columns.asks,
            [
                None,
                Some(r#"[{"kind":"url","outcome":"cancelled","duration_us":5}]"#.to_owned()),
                None
            ]
        );
        assert_eq!(
            columns.switch,
            [
                None,
                None,
                Some(r#"{"action":"enable","selector":"tag:beta","changed":[]}"#.to_owned())
            ]
        );
        assert_eq!(columns.parameters().len(), 19);
    }

    #[test]
    fn a_nul_becomes_the_replacement_character_and_nothing_else_changes() {
        assert_eq!(storable("tool\0name\0"), "tool\u{FFFD}name\u{FFFD}");
        let clean = "quote ' \" é \u{1F600}";
        assert!(matches!(storable(clean), Cow::Borrowed(same) if same == clean));
    }
}
