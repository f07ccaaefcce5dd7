//! Date phrases: what a `{name:date}` capture accepts, and the day (or week) it means.
//!
//! People write dates in many ways, and a capture that only took ISO dates made `ask` refuse
//! "from monday to friday". This module reads the common written forms, deterministically and
//! relative to a `today` the caller supplies (so tests and replays fix the clock):
//!
//! - ISO dates, `2026-11-23` (also with `/` or `.` between the parts);
//! - day-first numeric dates, `23/11/2026`, `23.11.2026`, `23-11-2026`, and without the year
//!   (`23/11`, `23.11`, the current year). When the first number cannot be a day of that month
//!   but the second can (`11/23/2026`), the month-first reading is taken;
//! - month names, full or abbreviated, before or after the day, with or without the year:
//!   `23 Nov 2026`, `November 23, 2026`, `nov 23`, `23rd november`;
//! - `today`, `tomorrow`, `yesterday`;
//! - weekday names, full or abbreviated (`monday`, `mon`, `tues`, `thurs`). A bare weekday is
//!   the day of that name **in the current week**, which runs Monday to Sunday, even when it
//!   has passed: on a Thursday, "monday" is three days ago and "friday" is tomorrow. This is
//!   what "from monday to friday" means in an office. `next monday` is the Monday of next
//!   week, `last monday` the one of last week, and `this monday` the bare one;
//! - `this week`, `next week`, `last week`: the whole week, Monday to Sunday.
//!
//! A phrase means a [`DateSpan`]: one day, or for the week phrases seven. Numbers and words
//! that do not form a real date (`31/02/2026`, `someday`) are not dates, so a capture never
//! swallows them.

use jiff::{
    ToSpan,
    civil::{Date, Weekday},
};

/// The most words a date phrase has ("november 23 2026").
pub(crate) const MAX_DATE_WORDS: usize = 3;

/// The days a date phrase means: one day, or a Monday-to-Sunday week.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DateSpan {
    /// The first day.
    pub first: Date,
    /// The last day, the same as `first` for a single day.
    pub last: Date,
}

impl DateSpan {
    fn day(date: Date) -> Self {
        Self {
            first: date,
            last: date,
        }
    }
}

/// Reads `words` (as written, in order) as one date phrase relative to `today`.
///
/// Returns `None` when the words are not a date phrase, or name a day that does not exist.
pub fn parse_date_phrase(words: &[&str], today: Date) -> Option<DateSpan> {
    let cleaned: Vec<String> = words.iter().map(|word| clean(word)).collect();
    let words: Vec<&str> = cleaned.iter().map(String::as_str).collect();
    match words.as_slice() {
        [one] => single_word(one, today),
        ["this", "week"] => week_of(today, 0),
        ["next", "week"] => week_of(today, 1),
        ["last", "week"] => week_of(today, -1),
        [relative @ ("this" | "next" | "last"), day] => {
            let weeks = match *relative {
                "next" => 1,
                "last" => -1,
                _ => 0,
            };
            weekday_in_week(weekday(day)?, today, weeks)
        }
        [first, second] => day_and_month(first, second, today.year()).map(DateSpan::day),
        [first, second, year] => day_and_month(first, second, parse_year(year)?).map(DateSpan::day),
        _ => None,
    }
}

/// Lowercases a word and trims the sentence punctuation around it; inner separators stay.
fn clean(word: &str) -> String {
    word.trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase()
}

fn single_word(word: &str, today: Date) -> Option<DateSpan> {
    let offset = match word {
        "today" => Some(0),
        "tomorrow" => Some(1),
        "yesterday" => Some(-1),
        _ => None,
    };
    if let Some(days) = offset {
        return today.checked_add(days.days()).ok().map(DateSpan::day);
    }
    if let Some(day) = weekday(word) {
        return weekday_in_week(day, today, 0);
    }
    numeric(word, today.year()).map(DateSpan::day)
}

/// `2026-11-23`, `23/11/2026`, `23.11`: numbers separated by `-`, `/` or `.`.
fn numeric(word: &str, current_year: i16) -> Option<Date> {
    let parts: Vec<&str> = word.split(['-', '/', '.']).collect();
    let numbers: Vec<u16> = parts
        .iter()
        .map(|part| {
            (!part.is_empty() && part.len() <= 4 && part.bytes().all(|b| b.is_ascii_digit()))
                .then(|| part.parse().ok())
                .flatten()
        })
        .collect::<Option<_>>()?;
    match (parts.as_slice(), numbers.as_slice()) {
        ([year, ..], &[y, m, d]) if year.len() == 4 => date(i16::try_from(y).ok()?, m, d),
        ([.., year], &[a, b, y]) if year.len() == 4 => day_first(a, b, i16::try_from(y).ok()?),
        (_, &[a, b]) => day_first(a, b, current_year),
        _ => None,
    }
}

/// Day first, or month first when only that reading is a real date.
fn day_first(first: u16, second: u16, year: i16) -> Option<Date> {
    date(year, second, first).or_else(|| date(year, first, second))
}

fn date(year: i16, month: u16, day: u16) -> Option<Date> {
    let month = i8::try_from(month).ok()?;
    let day = i8::try_from(day).ok()?;
    Date::new(year, month, day).ok()
}

/// `23 nov`, `nov 23`, `23rd november`.
fn day_and_month(first: &str, second: &str, year: i16) -> Option<Date> {
    let (day, month) = match (month(first), month(second)) {
        (Some(month), None) => (day_of_month(second)?, month),
        (None, Some(month)) => (day_of_month(first)?, month),
        _ => return None,
    };
    date(year, month, day)
}

fn parse_year(word: &str) -> Option<i16> {
    (word.len() == 4 && word.bytes().all(|b| b.is_ascii_digit()))
        .then(|| word.parse().ok())
        .flatten()
}

/// `23`, `23rd`, `1st`: a day number with an optional English ordinal suffix.
fn day_of_month(word: &str) -> Option<u16> {
    let digits = ["st", "nd", "rd", "th"]
        .iter()
        .find_map(|suffix| word.strip_suffix(suffix))
        .unwrap_or(word);
    (!digits.is_empty() && digits.len() <= 2 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

fn month(word: &str) -> Option<u16> {
    const MONTHS: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let position = MONTHS
        .iter()
        .position(|name| *name == word || (word.len() >= 3 && name.starts_with(word)))?;
    u16::try_from(position + 1).ok()
}

fn weekday(word: &str) -> Option<Weekday> {
    const DAYS: [(&str, Weekday); 7] = [
        ("monday", Weekday::Monday),
        ("tuesday", Weekday::Tuesday),
        ("wednesday", Weekday::Wednesday),
        ("thursday", Weekday::Thursday),
        ("friday", Weekday::Friday),
        ("saturday", Weekday::Saturday),
        ("sunday", Weekday::Sunday),
    ];
    DAYS.iter()
        .find(|(name, _)| *name == word || (word.len() >= 3 && name.starts_with(word)))
        .map(|&(_, day)| day)
}

/// The Monday of `today`'s week, moved by `weeks`.
fn monday(today: Date, weeks: i32) -> Option<Date> {
    let back = i64::from(today.weekday().to_monday_zero_offset());
    today
        .checked_sub(back.days())
        .ok()?
        .checked_add((i64::from(weeks) * 7).days())
        .ok()
}

fn week_of(today: Date, weeks: i32) -> Option<DateSpan> {
    let first = monday(today, weeks)?;
    let last = first.checked_add(6.days()).ok()?;
    Some(DateSpan { first, last })
}

fn weekday_in_week(day: Weekday, today: Date, weeks: i32) -> Option<DateSpan> {
    let offset = i64::from(day.to_monday_zero_offset());
    monday(today, weeks)?
        .checked_add(offset.days())
        .ok()
        .map(DateSpan::day)
}

#[cfg(test)]
mod tests {
    use jiff::civil::date;

    use super::*;

    /// A Thursday.
    const TODAY: Date = date(2026, 11, 26);

    fn day(phrase: &str) -> Option<Date> {
        let words: Vec<&str> = phrase.split_whitespace().collect();
        parse_date_phrase(&words, TODAY).map(|span| {
            assert_eq!(span.first, span.last, "{phrase} is one day");
            span.first
        })
    }

    #[test]
    fn reads_numeric_dates_in_the_common_orders() {
        let expected = Some(date(2026, 11, 23));
        for phrase in [
            "2026-11-23",
            "2026/11/23",
            "23/11/2026",
            "23.11.2026",
            "23-11-2026",
            "23/11",
            "23.11.",
            "11/23/2026",
            "(2026-11-23)",
        ] {
            assert_eq!(day(phrase), expected, "{phrase}");
        }
        // Day first when both readings exist.
        assert_eq!(day("03/04/2026"), Some(date(2026, 4, 3)));
    }

    #[test]
    fn reads_month_names() {
        let expected = Some(date(2026, 11, 23));
        for phrase in [
            "23 nov 2026",
            "23 November 2026",
            "November 23, 2026",
            "nov 23",
            "23rd november",
            "Nov. 23",
        ] {
            assert_eq!(day(phrase), expected, "{phrase}");
        }
    }

    #[test]
    fn reads_relative_days() {
        assert_eq!(day("today"), Some(TODAY));
        assert_eq!(day("Tomorrow"), Some(date(2026, 11, 27)));
        assert_eq!(day("yesterday"), Some(date(2026, 11, 25)));
    }

    #[test]
    fn a_bare_weekday_is_in_the_current_monday_to_sunday_week() {
        assert_eq!(day("monday"), Some(date(2026, 11, 23)), "already passed");
        assert_eq!(day("Thursday"), Some(TODAY));
        assert_eq!(day("fri"), Some(date(2026, 11, 27)));
        assert_eq!(day("sunday"), Some(date(2026, 11, 29)));
        assert_eq!(day("this tues"), Some(date(2026, 11, 24)));
        assert_eq!(day("next monday"), Some(date(2026, 11, 30)));
        assert_eq!(day("last friday"), Some(date(2026, 11, 20)));
    }

    #[test]
    fn week_phrases_span_monday_to_sunday() {
        let week = |phrase: &str| {
            let words: Vec<&str> = phrase.split_whitespace().collect();
            parse_date_phrase(&words, TODAY)
        };
        assert_eq!(
            week("this week"),
            Some(DateSpan {
                first: date(2026, 11, 23),
                last: date(2026, 11, 29)
            })
        );
        assert_eq!(
            week("next week"),
            Some(DateSpan {
                first: date(2026, 11, 30),
                last: date(2026, 12, 6)
            })
        );
        assert_eq!(
            week("last week").map(|span| span.first),
            Some(date(2026, 11, 16))
        );
    }

    #[test]
    fn words_that_are_not_dates_are_refused() {
        for phrase in [
            "31/02/2026",
            "2026-13-01",
            "someday",
            "for",
            "sam",
            "23",
            "mo",
            "next",
            "next month",
            "23 nov for",
            "2026-11-23 for sam",
            "1/2/3/4",
            "",
        ] {
            assert_eq!(day(phrase), None, "{phrase}");
        }
    }
}
