//! The roster tools: thin shells that take the organisation from the caller and hand the
//! work to [`RosterBook`](crate::RosterBook)'s rules, through the roster's store.
//!
//! Every tool reads `ctx.caller().org_id` and nothing else to decide whose roster it touches;
//! no input carries an organisation (`store::read` and `store::change` take it from the
//! context). The execute tools (`roster_assign_shift`, `roster_unassign_shift`,
//! `roster_claim_shift`, `roster_add_member`, `roster_post_notice`) and `roster_clear_roster`
//! (restricted) write, each as one atomic change of the store (see `store`). `roster_unassign_shift` is what undoes an assignment of a shift that was open, so a
//! workflow can compensate `roster_assign_shift` with tools of this domain alone.

use jiff::Timestamp;
use switchboard_core::{NoInput, ToolContext, ToolError, tool};

use crate::{
    error::RosterError,
    input::{
        AddMemberInput, AssignShiftInput, ClearRosterInput, ListShiftsInput, PostNoticeInput,
        ProposeShiftSwapInput, ShiftIdInput,
    },
    model::{Member, Notice, Shift},
    output::{ClearedRoster, NoticeList, RosterMember, ShiftList, SwapProposal, SwapStatus},
    store::{RosterState, change, read},
};

/// Lists your organisation's shifts between two days (inclusive, at most 31 days), sorted by
/// date and start time, optionally only those assigned to one user or only the open ones.
/// Open shifts have no assignee.
#[tool(
    name = "roster_list_shifts",
    title = "List shifts",
    domain = crate::Roster,
    category = read,
    permission = "roster.shifts.read",
    intents = [
        "[list|show] shifts [on|for|in|during] [{from..to=this week}] [for {assignee:user}]",
        "[list|show] shifts from|between {from:date} to|and|until {to:date} [for {assignee:user}]",
        "[list|show] open|unassigned shifts [on|for|in|during] [{from..to=this week}] => open_only=true",
        "[list|show] open|unassigned shifts from|between {from:date} to|and|until {to:date} => open_only=true"
    ]
)]
pub async fn list_shifts(
    ctx: &ToolContext<RosterState>,
    input: ListShiftsInput,
) -> Result<ShiftList, ToolError> {
    let roster = read(ctx).await?;
    let org_id = &ctx.caller().org_id;
    let shifts = if input.open_only {
        roster.list_open(org_id, input.from, input.to)
    } else {
        roster.list(org_id, input.from, input.to, input.assignee.as_deref())
    };
    Ok(ShiftList { shifts })
}

/// Proposes handing one of your organisation's shifts to another member, without changing the
/// roster. Checks that the shift and the member exist and returns a summary for approval;
/// apply it with `roster_assign_shift`.
#[tool(
    name = "roster_propose_shift_swap",
    title = "Propose a shift swap",
    domain = crate::Roster,
    category = propose,
    permission = "roster.swaps.propose",
    intents = ["swap shift {shift_id} with {with_user:user} [because {reason}]"]
)]
pub async fn propose_shift_swap(
    ctx: &ToolContext<RosterState>,
    input: ProposeShiftSwapInput,
) -> Result<SwapProposal, ToolError> {
    let org_id = &ctx.caller().org_id;
    let roster = read(ctx).await?;
    let shift = roster.find(org_id, &input.shift_id)?;
    let to_member = roster.member(org_id, &input.with_user)?;
    if shift.assignee.as_deref() == Some(to_member.user_id.as_str()) {
        return Err(RosterError::AlreadyAssigned {
            shift_id: shift.id.clone(),
            user_id: to_member.user_id.clone(),
        }
        .into());
    }
    Ok(SwapProposal {
        summary: summary(shift, to_member, input.reason.as_deref()),
        from_user: shift.assignee.clone(),
        to_user: to_member.user_id.clone(),
        shift: shift.clone(),
        status: SwapStatus::Proposed,
    })
}

/// Assigns one of your organisation's shifts to one of its members, replacing any current
/// assignee, and returns the updated shift.
#[tool(
    name = "roster_assign_shift",
    title = "Assign a shift",
    domain = crate::Roster,
    category = execute,
    permission = "roster.shifts.assign",
    intents = ["assign|give shift {shift_id} to {user_id:user}"]
)]
pub async fn assign_shift(
    ctx: &ToolContext<RosterState>,
    input: AssignShiftInput,
) -> Result<Shift, ToolError> {
    let org_id = ctx.caller().org_id.clone();
    let AssignShiftInput { shift_id, user_id } = input;
    change(ctx, move |roster| {
        roster.assign(&org_id, &shift_id, &user_id)
    })
    .await
}

/// Removes the assignee from one of your organisation's shifts, leaving it open, and returns
/// it. A shift that is already open is returned unchanged.
#[tool(
    name = "roster_unassign_shift",
    title = "Unassign a shift",
    domain = crate::Roster,
    category = execute,
    permission = "roster.shifts.assign",
    intents = ["unassign shift {shift_id}"]
)]
pub async fn unassign_shift(
    ctx: &ToolContext<RosterState>,
    input: ShiftIdInput,
) -> Result<Shift, ToolError> {
    let org_id = ctx.caller().org_id.clone();
    let shift_id = input.shift_id;
    change(ctx, move |roster| roster.unassign(&org_id, &shift_id)).await
}

/// Puts a new member on your organisation's roster, so shifts can be assigned to them, and
/// returns them. Refuses a user id the roster already has (`member_exists`).
#[tool(
    name = "roster_add_member",
    title = "Add a roster member",
    domain = crate::Roster,
    category = execute,
    permission = "roster.members.add"
)]
pub async fn add_member(
    ctx: &ToolContext<RosterState>,
    input: AddMemberInput,
) -> Result<RosterMember, ToolError> {
    let org_id = ctx.caller().org_id.clone();
    let AddMemberInput {
        user_id,
        name,
        role,
    } = input;
    let member = Member {
        user_id,
        name,
        role,
    };
    change(ctx, move |roster| {
        let added = roster.add_member(&org_id, member)?;
        Ok(RosterMember::from(&added))
    })
    .await
}

/// Posts a notice to your organisation's notice board, signed with your user id, and returns
/// it with its id and time. Every member can read it with `roster_list_notices`.
#[tool(
    name = "roster_post_notice",
    title = "Post a notice",
    domain = crate::Roster,
    category = execute,
    permission = "roster.notices.post",
    intents = ["post [a] notice {text}"],
    tags = ["notices"]
)]
pub async fn post_notice(
    ctx: &ToolContext<RosterState>,
    input: PostNoticeInput,
) -> Result<Notice, ToolError> {
    let org_id = ctx.caller().org_id.clone();
    let author = ctx.caller().user_id.to_string();
    let posted_at = Timestamp::now();
    change(ctx, move |roster| {
        Ok(roster.post_notice(&org_id, &author, input.text, posted_at))
    })
    .await
}

/// Lists the notices on your organisation's notice board, oldest first.
#[tool(
    name = "roster_list_notices",
    title = "List notices",
    domain = crate::Roster,
    category = read,
    permission = "roster.notices.read",
    intents = ["[list|show|read] notices|announcements"],
    tags = ["notices"]
)]
pub async fn list_notices(
    ctx: &ToolContext<RosterState>,
    _input: NoInput,
) -> Result<NoticeList, ToolError> {
    let notices = read(ctx).await?.notices(&ctx.caller().org_id).to_vec();
    Ok(NoticeList { notices })
}

/// Shows one of your organisation's shifts: its day, hours, position and who works it.
#[tool(
    name = "roster_get_shift",
    title = "Show a shift",
    domain = crate::Roster,
    category = read,
    permission = "roster.shifts.read",
    intents = ["show|get shift {shift_id}"]
)]
pub async fn get_shift(
    ctx: &ToolContext<RosterState>,
    input: ShiftIdInput,
) -> Result<Shift, ToolError> {
    Ok(read(ctx)
        .await?
        .find(&ctx.caller().org_id, &input.shift_id)?
        .clone())
}

/// Takes an open shift of your organisation for yourself, and returns it. A shift someone
/// already works cannot be claimed.
#[tool(
    name = "roster_claim_shift",
    title = "Claim an open shift",
    domain = crate::Roster,
    category = execute,
    permission = "roster.shifts.claim",
    intents = ["claim|take shift {shift_id}"]
)]
pub async fn claim_shift(
    ctx: &ToolContext<RosterState>,
    input: ShiftIdInput,
) -> Result<Shift, ToolError> {
    let org_id = ctx.caller().org_id.clone();
    let user_id = ctx.caller().user_id.to_string();
    let shift_id = input.shift_id;
    change(ctx, move |roster| {
        roster.claim(&org_id, &shift_id, &user_id)
    })
    .await
}

/// Removes every assignee from your organisation's shifts in one week (Monday through
/// Sunday). Cannot be undone: the previous assignments are not kept.
#[tool(
    name = "roster_clear_roster",
    title = "Clear a week's assignments",
    domain = crate::Roster,
    category = restricted,
    permission = "roster.roster.clear"
)]
pub async fn clear_roster(
    ctx: &ToolContext<RosterState>,
    input: ClearRosterInput,
) -> Result<ClearedRoster, ToolError> {
    let org_id = ctx.caller().org_id.clone();
    let week_start = input.week_start;
    change(ctx, move |roster| {
        let cleared = roster.clear_week(&org_id, week_start)?;
        Ok(ClearedRoster {
            org_id: org_id.to_string(),
            week_start,
            cleared,
        })
    })
    .await
}

/// "Hand shift acme-2026-11-23-am (front desk, Monday 2026-11-23, 08:00-14:00) from sam to
/// Mark Mendez (mark): reason."
fn summary(shift: &Shift, to_member: &Member, reason: Option<&str>) -> String {
    let from = match &shift.assignee {
        Some(user_id) => format!("from {user_id} "),
        None => "(now open) ".to_owned(),
    };
    let reason = match reason.map(str::trim) {
        Some(reason) if !reason.is_empty() => format!(": {reason}"),
        _ => String::new(),
    };
    format!(
        "Hand shift {id} ({position}, {weekday:?} {date}, {start}-{end}) {from}to {name} \
         ({user_id}){reason}",
        id = shift.id,
        position = shift.position,
        weekday = shift.date.weekday(),
        date = shift.date,
        start = shift.start.strftime("%H:%M"),
        end = shift.end.strftime("%H:%M"),
        name = to_member.name,
        user_id = to_member.user_id,
    )
}

#[cfg(test)]
mod tests;
