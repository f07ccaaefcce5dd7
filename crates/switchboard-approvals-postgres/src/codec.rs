//! Timestamps as `BIGINT` nanoseconds since the Unix epoch, the encoding the SQLite stores use
//! too (`switchboard_sqlite::timestamp_to_sql`), copied here so that this crate does not link
//! SQLite: exact to the nanosecond from 1677 to 2262, clamped outside.

use jiff::Timestamp;
use switchboard_postgres::QueryError;

/// A timestamp as integer nanoseconds, clamped to what a `BIGINT` holds.
pub(crate) fn timestamp_to_sql(timestamp: Timestamp) -> i64 {
    let nanoseconds = timestamp.as_nanosecond();
    i64::try_from(nanoseconds).unwrap_or(if nanoseconds < 0 { i64::MIN } else { i64::MAX })
}

/// Integer nanoseconds read from `column` back as a timestamp.
pub(crate) fn timestamp_from_sql(column: &str, nanoseconds: i64) -> Result<Timestamp, QueryError> {
    Timestamp::from_nanosecond(i128::from(nanoseconds))
        .map_err(|error| QueryError::Decode(format!("column {column}: {error}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip_to_the_nanosecond_and_extremes_clamp() {
        let now = Timestamp::constant(1_795_000_000, 123_456_789);
        let stored = timestamp_to_sql(now);
        assert_eq!(timestamp_from_sql("t", stored).expect("in range"), now);
        assert_eq!(timestamp_to_sql(Timestamp::MAX), i64::MAX);
        assert_eq!(timestamp_to_sql(Timestamp::MIN), i64::MIN);
    }
}
