//! Column encodings every store uses the same way, so that a file reads the same in `sqlite3`
//! whichever store wrote it.
//!
//! Timestamps are integer nanoseconds since the Unix epoch (UTC): exact for every instant from
//! 1677 to 2262. An instant outside that range (never produced by a clock, but a caller may
//! pass `Timestamp::MAX` as "never") is clamped to it rather than failing the write it arrived
//! in, and reads back as the clamped instant.

use jiff::Timestamp;
use rusqlite::types::Type;

/// A timestamp as integer nanoseconds, clamped to what an `INTEGER` holds.
pub fn timestamp_to_sql(timestamp: Timestamp) -> i64 {
    let nanoseconds = timestamp.as_nanosecond();
    i64::try_from(nanoseconds).unwrap_or(if nanoseconds < 0 { i64::MIN } else { i64::MAX })
}

/// Integer nanoseconds read from column `index` back as a timestamp.
pub fn timestamp_from_sql(index: usize, nanoseconds: i64) -> rusqlite::Result<Timestamp> {
    Timestamp::from_nanosecond(i128::from(nanoseconds))
        .map_err(|error| invalid_column(index, Type::Integer, error))
}

/// A column whose value this build cannot read back, as the error a row mapper returns.
pub fn invalid_column(
    index: usize,
    kind: Type,
    error: impl Into<Box<dyn std::error::Error + Send + Sync>>,
) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(index, kind, error.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip_to_the_nanosecond_and_extremes_clamp() {
        let now = Timestamp::constant(1_795_000_000, 123_456_789);
        let stored = timestamp_to_sql(now);
        assert_eq!(timestamp_from_sql(0, stored).expect("in range"), now);
        assert_eq!(timestamp_to_sql(Timestamp::MAX), i64::MAX);
        assert_eq!(timestamp_to_sql(Timestamp::MIN), i64::MIN);
        assert!(
            timestamp_from_sql(0, i64::MAX).is_ok(),
            "a clamped value reads back"
        );
    }
}
