//! What can go wrong in the roster, and how it reaches the caller.
//!
//! [`RosterError`] is what the state logic returns; `From<RosterError> for ToolError` gives each
//! variant a stable snake_case code. Errors never say whether a shift or a user exists in
//! *another* organisation: "not found" is the same answer whether the id is unknown everywhere
//! or belongs to someone else.

use jiff::civil::Date;
use switchboard_core::ToolError;

/// A roster operation that cannot be carried out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RosterError {
    /// No shift with that id in the caller's organisation.
    #[error(
        "no shift `{shift_id}` exists in your organisation; list shifts with `roster_list_shifts` \
         to find a valid id"
    )]
    ShiftNotFound {
        /// The id asked for.
        shift_id: String,
    },

    /// The user is not on the caller's organisation's roster.
    #[error(
        "`{user_id}` is not a member of your organisation's roster; use the user id of a member \
         of your organisation"
    )]
    UnknownMember {
        /// The user id asked for.
        user_id: String,
    },

    /// A swap was proposed to the member who already works the shift.
    #[error(
        "shift `{shift_id}` is already assigned to `{user_id}`; propose the swap to another member"
    )]
    AlreadyAssigned {
        /// The shift.
        shift_id: String,
        /// Its current assignee.
        user_id: String,
    },

    /// A member was added under a user id the roster already has.
    #[error(
        "`{user_id}` is already a member of your organisation's roster; choose another user id, \
         or assign shifts to the existing member"
    )]
    MemberExists {
        /// The user id asked for.
        user_id: String,
    },

    /// A claim of a shift that someone already works.
    #[error("shift `{shift_id}` is already taken by `{user_id}`; claim an open shift instead")]
    ShiftTaken {
        /// The shift.
        shift_id: String,
        /// Its assignee.
        user_id: String,
    },

    /// The shift's week is locked (its payroll is closed): its shifts may not change.
    #[error(
        "the week of {week_start} is locked (its payroll is closed); its shifts can no longer \
         change: ask an administrator, or change a shift of an open week"
    )]
    WeekLocked {
        /// The Monday of the locked week.
        week_start: Date,
    },

    /// A week was named by a day that is not its Monday.
    #[error("{date} is a {weekday:?}, not a Monday; name a week by its Monday")]
    NotAMonday {
        /// The day given.
        date: Date,
        /// Its weekday.
        weekday: jiff::civil::Weekday,
    },

    /// The roster's store could not be read or written (its database is down or refused).
    #[error(
        "the roster's store is unavailable ({reason}); try again shortly with the same \
         idempotency key"
    )]
    Unavailable {
        /// What the store said.
        reason: String,
    },
}

impl RosterError {
    /// The stable snake_case code callers match on.
    pub const fn code(&self) -> &'static str {
        match self {
            RosterError::ShiftNotFound { .. } => "shift_not_found",
            RosterError::UnknownMember { .. } => "unknown_member",
            RosterError::MemberExists { .. } => "member_exists",
            RosterError::AlreadyAssigned { .. } => "already_assigned",
            RosterError::ShiftTaken { .. } => "shift_taken",
            RosterError::NotAMonday { .. } => "week_start_not_monday",
            RosterError::WeekLocked { .. } => "week_locked",
            RosterError::Unavailable { .. } => "roster_unavailable",
        }
    }
}

impl From<RosterError> for ToolError {
    fn from(error: RosterError) -> Self {
        ToolError::new(error.code(), error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_with_a_stable_code_and_the_message() {
        let error = ToolError::from(RosterError::ShiftNotFound {
            shift_id: "globex-2026-11-23-am".to_owned(),
        });
        assert_eq!(error.code(), "shift_not_found");
        assert!(error.message().contains("`globex-2026-11-23-am`"));
        assert!(error.message().contains("roster_list_shifts"));
    }

    #[test]
    fn names_the_weekday_of_a_wrong_week_start() {
        let date = jiff::civil::date(2026, 11, 24);
        let error = RosterError::NotAMonday {
            date,
            weekday: date.weekday(),
        };
        assert_eq!(error.code(), "week_start_not_monday");
        assert_eq!(
            error.to_string(),
            "2026-11-24 is a Tuesday, not a Monday; name a week by its Monday"
        );
    }
}
