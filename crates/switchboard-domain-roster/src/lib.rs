#![doc = include_str!("../README.md")]

mod error;
mod gates;
mod input;
mod model;
mod output;
mod pages;
mod seed;
mod state;
#[cfg(test)]
mod testing;
mod tools;

pub use error::RosterError;
pub use gates::{assign_week_not_locked, claim_week_not_locked, clear_week_not_locked};
pub use input::{
    AssignShiftInput, ClearRosterInput, ListShiftsInput, MAX_LIST_DAYS, ProposeShiftSwapInput,
    ShiftIdInput,
};
pub use model::{Member, Shift};
pub use output::{ClearedRoster, ShiftList, SwapProposal, SwapStatus};
pub use pages::{
    MemberData, MemberPage, MemberParams, RosterHome, RosterHomeData, ShiftPage, WeekData,
    WeekPage, WeekParams,
};
pub use seed::{LOCKED_WEEK_START, SEED_WEEK_START};
pub use state::RosterState;
pub use tools::{
    AssignShift, ClaimShift, ClearRoster, GetShift, ListShifts, ProposeShiftSwap, assign_shift,
    claim_shift, clear_roster, get_shift, list_shifts, propose_shift_swap,
};

switchboard_core::domain! {
    /// Shift rosters: each organisation's members and shifts, who works when, and swaps.
    pub Roster { name: "roster", state: RosterState = RosterState::seeded }
}

switchboard_core::default_grants! {
    domain: "roster",
    toml: include_str!("../default-permissions.toml"),
}
