//! The roster tools' inputs, and the checks params must pass before a tool body runs.
//!
//! The runtime deserializes params into these types and calls `validator::Validate::validate`,
//! so a tool body never sees a reversed or oversized date range or a week that does not start
//! on a Monday. No input has an `org_id`: the organisation always comes from the call context.

use std::borrow::Cow;

use jiff::civil::{Date, Weekday};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use switchboard_core::ToolInput;
use validator::{Validate, ValidationError};

/// The most days, counting both ends, that one `roster_list_shifts` call may cover.
pub const MAX_LIST_DAYS: i32 = 31;

/// Which shifts to list.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
#[serde(deny_unknown_fields)]
#[validate(schema(function = check_range))]
pub struct ListShiftsInput {
    /// First day to list, inclusive (`YYYY-MM-DD`).
    pub from: Date,
    /// Last day to list, inclusive (`YYYY-MM-DD`). Not before `from`; the range covers at most
    /// 31 days.
    pub to: Date,
    /// List only the shifts assigned to this user id; all shifts when absent.
    #[validate(length(min = 1, max = 64))]
    pub assignee: Option<String>,
    /// When true, list only the open shifts, those with no assignee; false when absent. Cannot
    /// be combined with `assignee`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub open_only: bool,
}

/// A proposed swap: who should take over a shift, and why.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
#[serde(deny_unknown_fields)]
pub struct ProposeShiftSwapInput {
    /// The id of the shift to hand over (for example `acme-2026-11-23-am`).
    #[validate(length(min = 1, max = 64))]
    pub shift_id: String,
    /// The user id of the member who would take the shift.
    #[validate(length(min = 1, max = 64))]
    pub with_user: String,
    /// Why the swap is wanted, shown to whoever approves it.
    #[validate(length(max = 500))]
    pub reason: Option<String>,
}

/// A shift and the member to put on it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
#[serde(deny_unknown_fields)]
pub struct AssignShiftInput {
    /// The id of the shift to assign (for example `acme-2026-11-23-am`).
    #[validate(length(min = 1, max = 64))]
    pub shift_id: String,
    /// The user id of the member who will work the shift.
    #[validate(length(min = 1, max = 64))]
    pub user_id: String,
}

/// A person to put on the roster.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
#[serde(deny_unknown_fields)]
pub struct AddMemberInput {
    /// The new member's user id, the id they sign in with and shifts are assigned to (for
    /// example `nina`). Must not already be on the roster.
    #[validate(length(min = 1, max = 64))]
    pub user_id: String,
    /// The new member's display name (for example `Nina Novak`).
    #[validate(length(min = 1, max = 100))]
    pub name: String,
    /// The new member's role on the roster (for example `staff`).
    #[validate(length(min = 1, max = 32))]
    pub role: String,
}

/// A notice to post.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
#[serde(deny_unknown_fields)]
pub struct PostNoticeInput {
    /// The notice's text, 1 to 2000 characters (for example `Welcome to the team, Nina!`).
    #[validate(length(min = 1, max = 2000))]
    pub text: String,
}

/// One shift, by id.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
#[serde(deny_unknown_fields)]
pub struct ShiftIdInput {
    /// The shift's id (for example `acme-2026-11-23-am`).
    #[validate(length(min = 1, max = 64))]
    pub shift_id: String,
}

/// The week whose assignments to clear.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, Validate, ToolInput)]
#[serde(deny_unknown_fields)]
pub struct ClearRosterInput {
    /// The Monday the week starts on (`YYYY-MM-DD`); the week runs through the Sunday after.
    #[validate(custom(function = check_monday))]
    pub week_start: Date,
}

fn invalid(code: &'static str, message: String) -> ValidationError {
    ValidationError::new(code).with_message(Cow::Owned(message))
}

fn check_range(input: &ListShiftsInput) -> Result<(), ValidationError> {
    let ListShiftsInput {
        from,
        to,
        assignee,
        open_only,
    } = input;
    if *open_only && assignee.is_some() {
        return Err(invalid(
            "conflicting_filters",
            "`open_only` lists shifts with no assignee, so it cannot be combined with `assignee`; \
             give one of them"
                .to_owned(),
        ));
    }
    if to < from {
        return Err(invalid(
            "range_reversed",
            format!("`to` ({to}) is before `from` ({from}); give the earlier day as `from`"),
        ));
    }
    // A span between two valid dates always fits; saturate rather than trust that.
    let days = from
        .until(*to)
        .map_or(i32::MAX, |span| span.get_days().saturating_add(1));
    if days > MAX_LIST_DAYS {
        return Err(invalid(
            "range_too_long",
            format!(
                "{from} to {to} covers {days} days, more than the {MAX_LIST_DAYS} one call may \
                 list; split it into shorter ranges"
            ),
        ));
    }
    Ok(())
}

fn check_monday(date: &Date) -> Result<(), ValidationError> {
    let weekday = date.weekday();
    if weekday == Weekday::Monday {
        return Ok(());
    }
    let hint = match date.nth_weekday(-1, Weekday::Monday) {
        Ok(monday) => format!("; that week's Monday is {monday}"),
        Err(_) => String::new(),
    };
    Err(invalid(
        "not_a_monday",
        format!("{date} is a {weekday:?}; a week is named by its Monday{hint}"),
    ))
}

#[cfg(test)]
mod tests {
    use jiff::civil::date;
    use switchboard_core::{FieldError, validate_typed};

    use super::*;

    fn range(from: Date, to: Date) -> ListShiftsInput {
        ListShiftsInput {
            from,
            to,
            assignee: None,
            open_only: false,
        }
    }

    #[test]
    fn a_range_of_one_to_31_days_is_valid() {
        // Both ends count: a single day is one day, and all of December is 31.
        assert!(
            range(date(2026, 11, 23), date(2026, 11, 23))
                .validate()
                .is_ok()
        );
        assert!(
            range(date(2026, 12, 1), date(2026, 12, 31))
                .validate()
                .is_ok()
        );
        // November has 30 days, so November 1 to December 1 is 31 days.
        assert!(
            range(date(2026, 11, 1), date(2026, 12, 1))
                .validate()
                .is_ok()
        );
        assert!(
            range(date(2026, 12, 1), date(2027, 1, 1))
                .validate()
                .is_err()
        );
    }

    #[test]
    fn a_reversed_range_is_refused_with_a_clear_message() {
        let errors = validate_typed(&range(date(2026, 11, 29), date(2026, 11, 23)))
            .expect_err("to is before from");
        assert_eq!(
            errors,
            [FieldError::new(
                "",
                "`to` (2026-11-23) is before `from` (2026-11-29); give the earlier day as `from`"
            )]
        );
    }

    #[test]
    fn a_range_over_31_days_is_refused() {
        let errors = range(date(2026, 11, 1), date(2027, 1, 1))
            .validate()
            .expect_err("62 days");
        let message = errors.to_string();
        assert!(message.contains("covers 62 days"), "{message}");
        assert!(
            message.contains("split it into shorter ranges"),
            "{message}"
        );
    }

    #[test]
    fn open_only_cannot_be_combined_with_an_assignee() {
        let mut input = range(date(2026, 11, 23), date(2026, 11, 29));
        input.open_only = true;
        assert!(input.validate().is_ok());
        input.assignee = Some("sam".to_owned());
        let errors = input.validate().expect_err("conflicting filters");
        assert!(
            errors
                .to_string()
                .contains("cannot be combined with `assignee`"),
            "{errors}"
        );
    }

    #[test]
    fn a_notice_holds_one_to_2000_characters() {
        let notice = |text: String| PostNoticeInput { text }.validate();
        assert!(notice("é".repeat(2000)).is_ok());
        assert!(notice("x".repeat(2001)).is_err());
        assert!(notice(String::new()).is_err());
    }

    #[test]
    fn an_empty_assignee_is_refused() {
        let mut input = range(date(2026, 11, 23), date(2026, 11, 29));
        input.assignee = Some(String::new());
        let errors = validate_typed(&input).expect_err("empty assignee");
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].path, "/assignee");
    }

    #[test]
    fn week_start_must_be_a_monday() {
        let monday = ClearRosterInput {
            week_start: date(2026, 11, 23),
        };
        assert!(monday.validate().is_ok());
        let wednesday = ClearRosterInput {
            week_start: date(2026, 11, 25),
        };
        let errors = validate_typed(&wednesday).expect_err("not a Monday");
        assert_eq!(
            errors,
            [FieldError::new(
                "/week_start",
                "2026-11-25 is a Wednesday; a week is named by its Monday; that week's Monday is \
                 2026-11-23"
            )]
        );
    }

    #[test]
    fn ids_and_reasons_have_bounded_lengths() {
        let swap = ProposeShiftSwapInput {
            shift_id: String::new(),
            with_user: "x".repeat(65),
            reason: Some("r".repeat(501)),
        };
        let paths: Vec<String> = validate_typed(&swap)
            .expect_err("three bad fields")
            .into_iter()
            .map(|error| error.path)
            .collect();
        assert_eq!(paths, ["/reason", "/shift_id", "/with_user"]);
        let assign = AssignShiftInput {
            shift_id: "acme-2026-11-23-am".to_owned(),
            user_id: "sam".to_owned(),
        };
        assert!(assign.validate().is_ok());
    }
}
