//! The roster's gates: checks the runtime runs before a mutating roster tool, with the tool's
//! validated input and a read-only view of the roster.
//!
//! A locked week (payroll closed, see [`RosterBook::lock_week`](crate::RosterBook::lock_week)) may not change: assigning,
//! unassigning or claiming one of its shifts, or clearing it, is refused with `gate_refused` (code `week_locked`) before any
//! idempotency key is claimed or proposal stored. An unknown shift passes the gate, so the
//! tool itself reports it as not found, the same way for every organisation.

use switchboard_core::{ToolContext, ToolError};

use crate::{
    error::RosterError,
    input::{AssignShiftInput, ClearRosterInput, ShiftIdInput},
    store::{RosterState, read},
    tools::{AssignShift, ClaimShift, ClearRoster, UnassignShift},
};

/// Refuses to assign a shift of a locked week.
pub async fn assign_week_not_locked(
    ctx: &ToolContext<RosterState>,
    input: &AssignShiftInput,
) -> Result<(), ToolError> {
    shift_week_not_locked(ctx, &input.shift_id).await
}

/// Refuses to claim a shift of a locked week.
pub async fn claim_week_not_locked(
    ctx: &ToolContext<RosterState>,
    input: &ShiftIdInput,
) -> Result<(), ToolError> {
    shift_week_not_locked(ctx, &input.shift_id).await
}

async fn shift_week_not_locked(
    ctx: &ToolContext<RosterState>,
    shift_id: &str,
) -> Result<(), ToolError> {
    let roster = read(ctx).await?;
    let org_id = &ctx.caller().org_id;
    let locked = roster
        .find(org_id, shift_id)
        .ok()
        .and_then(|shift| roster.locked_week_of(org_id, shift.date));
    match locked {
        Some(week_start) => Err(RosterError::WeekLocked { week_start }.into()),
        None => Ok(()),
    }
}

/// Refuses to unassign a shift of a locked week.
pub async fn unassign_week_not_locked(
    ctx: &ToolContext<RosterState>,
    input: &ShiftIdInput,
) -> Result<(), ToolError> {
    shift_week_not_locked(ctx, &input.shift_id).await
}

/// Refuses to clear a locked week.
pub async fn clear_week_not_locked(
    ctx: &ToolContext<RosterState>,
    input: &ClearRosterInput,
) -> Result<(), ToolError> {
    let roster = read(ctx).await?;
    match roster.locked_week_of(&ctx.caller().org_id, input.week_start) {
        Some(week_start) => Err(RosterError::WeekLocked { week_start }.into()),
        None => Ok(()),
    }
}

switchboard_core::tool_policy! {
    tool: AssignShift,
    gate: assign_week_not_locked,
}

switchboard_core::tool_policy! {
    tool: ClaimShift,
    gate: claim_week_not_locked,
}

switchboard_core::tool_policy! {
    tool: UnassignShift,
    gate: unassign_week_not_locked,
}

switchboard_core::tool_policy! {
    tool: ClearRoster,
    gate: clear_week_not_locked,
}

#[cfg(test)]
mod tests {

    use futures::executor::block_on;
    use switchboard_core::{CallContext, Category, DomainCell};

    use super::*;
    use crate::{LOCKED_WEEK_START, SEED_WEEK_START};

    fn context(org: &str) -> ToolContext<RosterState> {
        let caller = CallContext::builder()
            .org(org)
            .user("mark")
            .session("s")
            .correlation("c")
            .build()
            .verify()
            .expect("complete");
        let cell = DomainCell::standalone("roster", RosterState::in_memory());
        ToolContext::new(caller, "gate", Category::Read, cell)
    }

    fn assign(shift_id: &str) -> AssignShiftInput {
        AssignShiftInput {
            shift_id: shift_id.to_owned(),
            user_id: "sam".to_owned(),
        }
    }

    #[test]
    fn a_shift_of_the_locked_week_cannot_be_assigned() {
        let error = block_on(assign_week_not_locked(
            &context("acme"),
            &assign("acme-2026-11-20-pm"),
        ))
        .expect_err("the week is locked");
        assert_eq!(error.code(), "week_locked");
        assert!(
            error.message().contains("2026-11-16"),
            "{}",
            error.message()
        );
    }

    #[test]
    fn a_shift_of_the_locked_week_cannot_be_unassigned() {
        let ctx = context("acme");
        let locked = ShiftIdInput {
            shift_id: "acme-2026-11-20-pm".to_owned(),
        };
        let error = block_on(unassign_week_not_locked(&ctx, &locked)).expect_err("locked");
        assert_eq!(error.code(), "week_locked");
        let open = ShiftIdInput {
            shift_id: "acme-2026-11-23-am".to_owned(),
        };
        assert!(block_on(unassign_week_not_locked(&ctx, &open)).is_ok());
    }

    #[test]
    fn open_weeks_and_unknown_shifts_pass() {
        let ctx = context("acme");
        assert!(block_on(assign_week_not_locked(&ctx, &assign("acme-2026-11-23-am"))).is_ok());
        // Unknown here (another org's id): the tool reports it, not the gate.
        assert!(
            block_on(assign_week_not_locked(
                &ctx,
                &assign("globex-2026-11-20-pm")
            ))
            .is_ok()
        );
    }

    #[test]
    fn the_locked_week_cannot_be_cleared_but_the_open_one_can() {
        let ctx = context("globex");
        let locked = ClearRosterInput {
            week_start: LOCKED_WEEK_START,
        };
        assert!(block_on(clear_week_not_locked(&ctx, &locked)).is_err());
        let open = ClearRosterInput {
            week_start: SEED_WEEK_START,
        };
        assert!(block_on(clear_week_not_locked(&ctx, &open)).is_ok());
    }
}
