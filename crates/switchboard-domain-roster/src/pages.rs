//! The roster's pages: its home, a week, a shift, and one member's shifts.
//!
//! Each page reads through the roster's read tools (so a shift of another organisation is not
//! found, exactly like an id that does not exist) and offers the roster's tools as actions,
//! bound to the shift or week in its URL and offered only when the shift's state allows them:
//! an open shift offers `claim` and `assign`, a shift someone works offers `propose_swap`.

use std::fmt::Write as _;

use jiff::{ToSpan, Zoned, civil::Date};
use serde::{Deserialize, Serialize};
use switchboard_core::{Action, Initiator, NoInput, Page, PageError, PageLoader, PageSpec};

use crate::{
    input::{ListShiftsInput, ShiftIdInput},
    model::Shift,
    tools::{AssignShift, ClaimShift, ClearRoster, GetShift, ListShifts, ProposeShiftSwap},
};

/// The Monday of the week `day` is in.
fn monday_of(day: Date) -> Date {
    let back = i64::from(day.weekday().to_monday_zero_offset());
    day.checked_sub(back.days()).unwrap_or(day)
}

/// The Sunday after `monday`.
fn sunday_after(monday: Date) -> Date {
    monday.checked_add(6.days()).unwrap_or(monday)
}

/// One shift as a markdown table row, linked to its page.
fn shift_row(text: &mut String, shift: &Shift) {
    let _ = writeln!(
        text,
        "| [{id}](/roster/shifts/{id}) | {weekday:?} {date} | {start}-{end} | {position} | {who} |",
        id = shift.id,
        weekday = shift.date.weekday(),
        date = shift.date,
        start = shift.start.strftime("%H:%M"),
        end = shift.end.strftime("%H:%M"),
        position = shift.position,
        who = shift.assignee.as_deref().unwrap_or("open"),
    );
}

fn shift_table(shifts: &[Shift]) -> String {
    if shifts.is_empty() {
        return "No shifts.\n".to_owned();
    }
    let mut text =
        String::from("| shift | day | hours | position | assignee |\n|---|---|---|---|---|\n");
    for shift in shifts {
        shift_row(&mut text, shift);
    }
    text
}

/// `/roster`: where the roster starts, this week and next.
#[derive(Debug)]
pub struct RosterHome;

/// What the roster's home shows.
#[derive(Debug, Serialize)]
pub struct RosterHomeData {
    /// This week's Monday, by the server's clock.
    pub this_week: Date,
    /// Next week's Monday.
    pub next_week: Date,
}

impl Page for RosterHome {
    type Params = NoInput;
    type Data = RosterHomeData;
    const SPEC: PageSpec = switchboard_core::page_spec! {
        domain: crate::Roster,
        route: "/roster",
        title: "Roster",
        description: "The roster's weeks: this week and next, and who works when.",
    };

    async fn load(
        _loader: &PageLoader<'_>,
        _params: &NoInput,
    ) -> Result<RosterHomeData, PageError> {
        let this_week = monday_of(Zoned::now().date());
        Ok(RosterHomeData {
            this_week,
            next_week: this_week.checked_add(7.days()).unwrap_or(this_week),
        })
    }

    fn render(_params: &NoInput, data: &RosterHomeData) -> String {
        format!(
            "- [This week](/roster/weeks/{}) \n- [Next week](/roster/weeks/{})\n",
            data.this_week, data.next_week
        )
    }
}

/// `/roster/weeks/{week_start}`: a week's shifts.
#[derive(Debug)]
pub struct WeekPage;

/// Which week.
#[derive(Debug, Serialize, Deserialize)]
pub struct WeekParams {
    /// The week's Monday.
    pub week_start: Date,
}

/// A week's shifts.
#[derive(Debug, Serialize)]
pub struct WeekData {
    /// Its Monday.
    pub monday: Date,
    /// Its shifts, by day and start time.
    pub shifts: Vec<Shift>,
}

impl Page for WeekPage {
    type Params = WeekParams;
    type Data = WeekData;
    const SPEC: PageSpec = switchboard_core::page_spec! {
        domain: crate::Roster,
        route: "/roster/weeks/{week_start}",
        title: "Week",
        description: "A week's shifts, Monday to Sunday, with who works each and which are open.",
    };

    async fn load(loader: &PageLoader<'_>, params: &WeekParams) -> Result<WeekData, PageError> {
        let monday = params.week_start;
        if monday_of(monday) != monday {
            return Err(PageError::invalid_param(
                "week_start",
                format!(
                    "{monday} is a {:?}; a week is named by its Monday, {}",
                    monday.weekday(),
                    monday_of(monday)
                ),
            ));
        }
        let list = loader
            .call::<ListShifts>(ListShiftsInput {
                from: monday,
                to: sunday_after(monday),
                assignee: None,
                open_only: false,
            })
            .await?;
        Ok(WeekData {
            monday,
            shifts: list.shifts,
        })
    }

    fn render(_params: &WeekParams, data: &WeekData) -> String {
        let previous = data.monday.checked_sub(7.days()).unwrap_or(data.monday);
        let next = data.monday.checked_add(7.days()).unwrap_or(data.monday);
        format!(
            "The week of Monday {monday} to Sunday {sunday}.\n\n{table}\n\
             [Previous week](/roster/weeks/{previous}) · [Next week](/roster/weeks/{next})\n",
            monday = data.monday,
            sunday = sunday_after(data.monday),
            table = shift_table(&data.shifts),
        )
    }

    fn actions() -> Vec<Action<Self>> {
        vec![
            Self::action::<ClearRoster>("clear_week")
                .when(|data, _| data.shifts.iter().any(|shift| shift.assignee.is_some())),
        ]
    }
}

/// `/roster/shifts/{shift_id}`: one shift.
#[derive(Debug)]
pub struct ShiftPage;

impl Page for ShiftPage {
    type Params = ShiftIdInput;
    type Data = Shift;
    const SPEC: PageSpec = switchboard_core::page_spec! {
        domain: crate::Roster,
        route: "/roster/shifts/{shift_id}",
        title: "Shift",
        description: "One shift: its day, hours and position, who works it, and what can be done with it.",
    };

    async fn load(loader: &PageLoader<'_>, params: &ShiftIdInput) -> Result<Shift, PageError> {
        loader.call::<GetShift>(params.clone()).await
    }

    fn render(_params: &ShiftIdInput, shift: &Shift) -> String {
        let who = match &shift.assignee {
            Some(user_id) => format!("[{user_id}](/roster/users/{user_id})"),
            None => "nobody: the shift is open".to_owned(),
        };
        format!(
            "- **Shift:** {id}\n- **Day:** {weekday:?} {date} ([the week](/roster/weeks/{monday}))\n\
             - **Hours:** {start}-{end}\n- **Position:** {position}\n- **Worked by:** {who}\n",
            id = shift.id,
            weekday = shift.date.weekday(),
            date = shift.date,
            monday = monday_of(shift.date),
            start = shift.start.strftime("%H:%M"),
            end = shift.end.strftime("%H:%M"),
            position = shift.position,
        )
    }

    fn actions() -> Vec<Action<Self>> {
        vec![
            // A claim takes the shift for whoever runs it, and an approved proposal runs as
            // its approver: so only a person claims; an agent proposes `assign` instead.
            Self::action::<ClaimShift>("claim").when(|shift, caller| {
                shift.assignee.is_none() && caller.initiator == Initiator::Human
            }),
            Self::action::<AssignShift>("assign").when(|shift, _| shift.assignee.is_none()),
            Self::action::<ProposeShiftSwap>("propose_swap")
                .when(|shift, _| shift.assignee.is_some()),
        ]
    }
}

/// `/roster/users/{user_id}`: one member's shifts this week and next.
#[derive(Debug)]
pub struct MemberPage;

/// Whose shifts.
#[derive(Debug, Serialize, Deserialize)]
pub struct MemberParams {
    /// The member's user id.
    pub user_id: String,
}

/// A member's shifts.
#[derive(Debug, Serialize)]
pub struct MemberData {
    /// The member.
    pub user_id: String,
    /// Their shifts from this week's Monday through next week's Sunday.
    pub shifts: Vec<Shift>,
}

impl Page for MemberPage {
    type Params = MemberParams;
    type Data = MemberData;
    const SPEC: PageSpec = switchboard_core::page_spec! {
        domain: crate::Roster,
        route: "/roster/users/{user_id}",
        title: "Member's shifts",
        description: "The shifts one member works this week and next.",
    };

    async fn load(loader: &PageLoader<'_>, params: &MemberParams) -> Result<MemberData, PageError> {
        let monday = monday_of(Zoned::now().date());
        let list = loader
            .call::<ListShifts>(ListShiftsInput {
                from: monday,
                to: sunday_after(monday.checked_add(7.days()).unwrap_or(monday)),
                assignee: Some(params.user_id.clone()),
                open_only: false,
            })
            .await?;
        Ok(MemberData {
            user_id: params.user_id.clone(),
            shifts: list.shifts,
        })
    }

    fn render(_params: &MemberParams, data: &MemberData) -> String {
        format!(
            "The shifts of `{}`, this week and next.\n\n{}",
            data.user_id,
            shift_table(&data.shifts)
        )
    }
}

switchboard_core::page!(RosterHome);
switchboard_core::page!(WeekPage);
switchboard_core::page!(ShiftPage);
switchboard_core::page!(MemberPage);
