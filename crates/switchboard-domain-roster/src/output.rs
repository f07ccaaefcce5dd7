//! What the roster tools return. Every shift in an output carries its `org_id`.
//!
//! These types are the tools' output schemas, so every field is documented: agents read the
//! descriptions to interpret the results.

use jiff::civil::Date;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::{Member, Notice, Shift};

/// The shifts that matched a listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ShiftList {
    /// The caller's organisation's shifts in the range, sorted by date, then start time.
    pub shifts: Vec<Shift>,
}

/// Where a swap proposal stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SwapStatus {
    /// Proposed and not applied: the roster is unchanged until someone assigns the shift.
    Proposed,
}

/// A swap that was checked and described, but not applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SwapProposal {
    /// The shift as it is now, before any swap.
    pub shift: Shift,
    /// The user id of the member who works the shift now; absent if it is open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_user: Option<String>,
    /// The user id of the member who would take it over.
    pub to_user: String,
    /// One sentence describing the swap, for a person to approve.
    pub summary: String,
    /// Always `proposed`: applying the swap is a separate `roster_assign_shift` call.
    pub status: SwapStatus,
}

/// The result of clearing a week.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClearedRoster {
    /// The organisation whose roster was cleared.
    pub org_id: String,
    /// The Monday of the cleared week.
    pub week_start: Date,
    /// How many shifts lost their assignee.
    pub cleared: usize,
}

/// A member of an organisation's roster, as the roster tools show them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RosterMember {
    /// The member's user id, the id shifts are assigned to.
    pub user_id: String,
    /// The member's display name.
    pub name: String,
    /// The member's role on the roster (for example `staff`).
    pub role: String,
}

impl From<&Member> for RosterMember {
    fn from(member: &Member) -> Self {
        Self {
            user_id: member.user_id.clone(),
            name: member.name.clone(),
            role: member.role.clone(),
        }
    }
}

/// The notices on the caller's organisation's board.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct NoticeList {
    /// Every notice, oldest first.
    pub notices: Vec<Notice>,
}
