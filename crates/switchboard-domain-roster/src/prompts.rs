//! The roster's prompt: "plan next week", which states a week's shifts, who works them and
//! which are open, and asks the model to propose a plan through the roster's own tools.
//!
//! It reads the caller's organisation's roster as it is when rendered (through the store, as
//! the read tools do) and names the tools by their registered names, so the plan the model
//! proposes is one it can carry out with the calls it is shown.

use std::fmt::Write as _;

use jiff::{ToSpan, civil::Date};
use schemars::JsonSchema;
use serde::Deserialize;
use switchboard_core::{Prompt, PromptMessage, PromptSpec, Tool, ToolContext, ToolError};

use crate::{
    Roster, RosterError,
    store::{RosterState, read},
    tools::{AssignShift, ClaimShift, ListShifts, PostNotice, ProposeShiftSwap},
};

/// The arguments of [`PlanNextWeek`].
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PlanWeekArgs {
    /// The Monday the week starts on (`YYYY-MM-DD`).
    pub week_start: Date,
    /// Only the shifts of this position (for example `front desk`); every position when absent.
    pub position: Option<String>,
}

/// States a week's shifts and open slots and asks the model for a plan that fills them.
#[derive(Debug)]
pub struct PlanNextWeek;

impl Prompt for PlanNextWeek {
    type Domain = Roster;
    type Args = PlanWeekArgs;
    const SPEC: PromptSpec = switchboard_core::prompt_spec! {
        domain: Roster,
        name: "plan_next_week",
        title: "Plan next week",
        description: "States a week's shifts, who works them and which are open, and asks for a \
                      plan that fills the open ones using the roster's tools.",
        permission: "roster.shifts.read",
    };

    async fn render(
        ctx: &ToolContext<RosterState>,
        args: PlanWeekArgs,
    ) -> Result<Vec<PromptMessage>, ToolError> {
        let monday = args.week_start;
        if monday.weekday() != jiff::civil::Weekday::Monday {
            return Err(RosterError::NotAMonday {
                date: monday,
                weekday: monday.weekday(),
            }
            .into());
        }
        let sunday = monday.checked_add(6.days()).unwrap_or(monday);
        let org_id = &ctx.caller().org_id;
        let book = read(ctx).await?;
        let shifts: Vec<_> = book
            .list(org_id, monday, sunday, None)
            .into_iter()
            .filter(|shift| {
                args.position
                    .as_deref()
                    .is_none_or(|position| shift.position == position)
            })
            .collect();
        let name_of = |user_id: &str| {
            book.members(org_id)
                .find(|member| member.user_id == user_id)
                .map_or_else(|| user_id.to_owned(), |member| member.name.clone())
        };
        let scope = args
            .position
            .as_deref()
            .map_or_else(String::new, |position| {
                format!(" for the position `{position}`")
            });
        let mut text =
            format!("Plan the roster of {org_id} for the week of {monday} to {sunday}{scope}.\n\n");
        if let Some(locked) = book.locked_week_of(org_id, monday) {
            let _ = writeln!(
                text,
                "This week (starting {locked}) is locked: its payroll is closed and no shift may change. Say so, and propose nothing.\n"
            );
        }
        if shifts.is_empty() {
            text.push_str("There are no shifts this week.\n");
        } else {
            text.push_str("Shifts this week:\n");
            for shift in &shifts {
                let who = shift.assignee.as_deref().map_or_else(
                    || "OPEN".to_owned(),
                    |user| format!("{} ({user})", name_of(user)),
                );
                let _ = writeln!(
                    text,
                    "- {} {} {}–{} {}: {who}",
                    shift.id,
                    shift.date.strftime("%a %Y-%m-%d"),
                    shift.start.strftime("%H:%M"),
                    shift.end.strftime("%H:%M"),
                    shift.position,
                );
            }
        }
        let open = shifts
            .iter()
            .filter(|shift| shift.assignee.is_none())
            .count();
        let _ = writeln!(text, "\nOpen shifts: {open} of {}.", shifts.len());
        text.push_str("\nMembers:\n");
        for member in book.members(org_id) {
            let worked = shifts
                .iter()
                .filter(|shift| shift.assignee.as_deref() == Some(member.user_id.as_str()))
                .count();
            let _ = writeln!(
                text,
                "- {} ({}, {}): {worked} shift(s) this week",
                member.name, member.user_id, member.role
            );
        }
        let _ = write!(
            text,
            "\nPropose a plan that fills every open shift and spreads the work fairly. For each \
             step name the tool and its input: `{assign}` (a manager assigns a shift), `{claim}` \
             (a member takes an open shift), `{swap}` (a member proposes to swap a shift they \
             work). Check the current state with `{list}` first, and announce the plan with \
             `{notice}`. Do not call any tool that changes the roster until the plan is \
             approved.",
            assign = AssignShift::SPEC.name,
            claim = ClaimShift::SPEC.name,
            swap = ProposeShiftSwap::SPEC.name,
            list = ListShifts::SPEC.name,
            notice = PostNotice::SPEC.name,
        );
        Ok(vec![PromptMessage::user_text(text)])
    }

    /// `week_start` completes with the Mondays of the coming eight weeks (from today's week on)
    /// that start with what was typed, at most four.
    fn complete(_ctx: &ToolContext<RosterState>, argument: &str, value: &str) -> Vec<String> {
        if argument != "week_start" {
            return Vec::new();
        }
        let today = jiff::Zoned::now().date();
        let ahead = i64::from(7 - today.weekday().to_monday_zero_offset()) % 7;
        let first = today.checked_add(ahead.days()).unwrap_or(today);
        (0..8_i64)
            .filter_map(|week| first.checked_add((week * 7).days()).ok())
            .map(|monday| monday.to_string())
            .filter(|monday| monday.starts_with(value))
            .take(4)
            .collect()
    }
}

switchboard_core::prompt!(PlanNextWeek);

#[cfg(test)]
mod tests {
    use futures::executor::block_on;
    use jiff::civil::date;
    use switchboard_core::{ContentBlock, Prompt};

    use super::*;
    use crate::{SEED_WEEK_START, testing::Harness};

    fn text_of(messages: &[PromptMessage]) -> &str {
        match messages {
            [
                PromptMessage {
                    content: ContentBlock::Text { text },
                    ..
                },
            ] => text,
            other => panic!("one text message, not {other:?}"),
        }
    }

    #[test]
    fn the_plan_states_the_weeks_shifts_open_slots_and_tools() {
        let harness = Harness::seeded();
        let ctx = harness.read_context("acme", "mark");
        let rendered = block_on(PlanNextWeek::render(
            &ctx,
            PlanWeekArgs {
                week_start: SEED_WEEK_START,
                position: None,
            },
        ))
        .expect("renders");
        insta::assert_snapshot!(text_of(&rendered));
    }

    #[test]
    fn another_organisations_shifts_never_show() {
        let harness = Harness::seeded();
        let ctx = harness.read_context("globex", "hank");
        let rendered = block_on(PlanNextWeek::render(
            &ctx,
            PlanWeekArgs {
                week_start: SEED_WEEK_START,
                position: None,
            },
        ))
        .expect("renders");
        let text = text_of(&rendered);
        assert!(text.contains("globex-2026-11-23"), "{text}");
        assert!(!text.contains("acme"), "{text}");
    }

    #[test]
    fn a_locked_week_says_so_and_a_day_that_is_no_monday_is_refused() {
        let harness = Harness::seeded();
        let ctx = harness.read_context("acme", "mark");
        let locked = block_on(PlanNextWeek::render(
            &ctx,
            PlanWeekArgs {
                week_start: crate::LOCKED_WEEK_START,
                position: None,
            },
        ))
        .expect("renders");
        assert!(text_of(&locked).contains("is locked"), "{locked:?}");
        let refused = block_on(PlanNextWeek::render(
            &ctx,
            PlanWeekArgs {
                week_start: date(2026, 11, 24),
                position: None,
            },
        ))
        .expect_err("a Tuesday");
        assert_eq!(refused.code(), "week_start_not_monday");
    }

    #[test]
    fn the_week_start_completes_with_mondays() {
        let harness = Harness::seeded();
        let ctx = harness.read_context("acme", "mark");
        let mondays = PlanNextWeek::complete(&ctx, "week_start", "");
        assert_eq!(mondays.len(), 4);
        for monday in &mondays {
            let day: Date = monday.parse().expect("a date");
            assert_eq!(day.weekday(), jiff::civil::Weekday::Monday);
        }
        assert!(PlanNextWeek::complete(&ctx, "position", "").is_empty());
    }
}
