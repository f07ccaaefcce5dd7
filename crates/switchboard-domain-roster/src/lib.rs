#![doc = include_str!("../README.md")]

#[cfg(feature = "conformance")]
pub mod conformance;
mod error;
mod gates;
mod input;
mod model;
mod output;
mod pages;
mod prompts;
mod seed;
mod state;
mod store;
#[cfg(test)]
mod testing;
mod tools;
mod workflows;

pub use error::RosterError;
pub use gates::{
    assign_week_not_locked, claim_week_not_locked, clear_week_not_locked, unassign_week_not_locked,
};
pub use input::{
    AddMemberInput, AssignShiftInput, ClearRosterInput, ListShiftsInput, MAX_LIST_DAYS,
    PostNoticeInput, ProposeShiftSwapInput, ShiftIdInput,
};
pub use model::{Member, Notice, Shift};
pub use output::{ClearedRoster, NoticeList, RosterMember, ShiftList, SwapProposal, SwapStatus};
pub use pages::{
    MemberData, MemberPage, MemberParams, RosterHome, RosterHomeData, ShiftPage, WeekData,
    WeekPage, WeekParams,
};
pub use prompts::{PlanNextWeek, PlanWeekArgs};
pub use seed::{LOCKED_WEEK_START, SEED_WEEK_START};
pub use state::{OrgRoster, RosterBook};
pub use store::{Applied, Changed, MemoryRosterStore, RosterChange, RosterState, RosterStore};
pub use tools::{
    AddMember, AssignShift, ClaimShift, ClearRoster, GetShift, ListNotices, ListShifts, PostNotice,
    ProposeShiftSwap, UnassignShift, add_member, assign_shift, claim_shift, clear_roster,
    get_shift, list_notices, list_shifts, post_notice, propose_shift_swap, unassign_shift,
};

switchboard_core::domain! {
    /// Shift rosters: each organisation's members and shifts, who works when, swaps, and notices.
    pub Roster { name: "roster", state: RosterState = RosterState::in_memory }
}

switchboard_core::default_grants! {
    domain: "roster",
    toml: include_str!("../default-permissions.toml"),
}
