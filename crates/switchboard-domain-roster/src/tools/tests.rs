//! The roster tools called the way the runtime calls them: through their marker types, with a
//! context per caller, over one shared roster.

use jiff::civil::date;
use switchboard_core::{
    Category, OrgId, Tool, linked_domains, linked_tools, schema::find_org_id_property,
};

use super::*;
use crate::{RosterBook, SEED_WEEK_START, testing::Harness};

fn seed_week(assignee: Option<&str>) -> ListShiftsInput {
    ListShiftsInput {
        from: SEED_WEEK_START,
        to: date(2026, 11, 29),
        assignee: assignee.map(str::to_owned),
        open_only: false,
    }
}

fn shift_id(shift_id: &str) -> ShiftIdInput {
    ShiftIdInput {
        shift_id: shift_id.to_owned(),
    }
}

fn nina() -> AddMemberInput {
    AddMemberInput {
        user_id: "nina".to_owned(),
        name: "Nina Novak".to_owned(),
        role: "staff".to_owned(),
    }
}

fn assign(shift_id: &str, user_id: &str) -> AssignShiftInput {
    AssignShiftInput {
        shift_id: shift_id.to_owned(),
        user_id: user_id.to_owned(),
    }
}

fn swap(shift_id: &str, with_user: &str) -> ProposeShiftSwapInput {
    ProposeShiftSwapInput {
        shift_id: shift_id.to_owned(),
        with_user: with_user.to_owned(),
        reason: Some("dentist appointment".to_owned()),
    }
}

#[test]
fn lists_only_the_callers_org() {
    let harness = Harness::seeded();
    for org_id in ["acme", "globex"] {
        let list = harness
            .call::<ListShifts>(org_id, "someone", seed_week(None))
            .expect("lists");
        assert_eq!(list.shifts.len(), 14);
        assert!(list.shifts.iter().all(|shift| shift.org_id == org_id));
    }
}

#[test]
fn proposes_a_swap_without_writing() {
    let harness = Harness::seeded();
    let proposal = harness
        .call::<ProposeShiftSwap>("acme", "sam", swap("acme-2026-11-23-am", "mark"))
        .expect("a valid swap");
    assert_eq!(proposal.from_user.as_deref(), Some("sam"));
    assert_eq!(proposal.to_user, "mark");
    assert_eq!(proposal.status, SwapStatus::Proposed);
    assert_eq!(proposal.shift.org_id, "acme");
    assert_eq!(
        proposal.summary,
        "Hand shift acme-2026-11-23-am (front desk, Monday 2026-11-23, 08:00-14:00) from sam to \
         Mark Mendez (mark): dentist appointment"
    );
    assert_eq!(harness.roster(), RosterBook::seeded());
}

#[test]
fn a_swap_is_checked_within_the_callers_org() {
    let harness = Harness::seeded();
    let code = |org_id: &str, input| {
        harness
            .call::<ProposeShiftSwap>(org_id, "sam", input)
            .map(|_| ())
            .map_err(|error| error.code().to_owned())
    };
    assert_eq!(
        code("acme", swap("globex-2026-11-23-am", "mark")),
        Err("shift_not_found".to_owned())
    );
    assert_eq!(
        code("acme", swap("acme-2026-11-23-am", "hank")),
        Err("unknown_member".to_owned())
    );
    assert_eq!(
        code("acme", swap("acme-2026-11-23-am", "sam")),
        Err("already_assigned".to_owned())
    );
}

#[test]
fn assigns_and_the_change_is_visible_to_later_reads() {
    let harness = Harness::seeded();
    let shift = harness
        .call::<AssignShift>("acme", "mark", assign("acme-2026-11-28-pm", "alice"))
        .expect("assigns");
    assert_eq!(shift.assignee.as_deref(), Some("alice"));
    assert_eq!(shift.org_id, "acme");
    let alices = harness
        .call::<ListShifts>("acme", "mark", seed_week(Some("alice")))
        .expect("lists");
    assert_eq!(alices.shifts, [shift]);
}

#[test]
fn another_orgs_shift_gives_the_same_error_as_a_missing_one() {
    let harness = Harness::seeded();
    let foreign = harness
        .call::<AssignShift>("acme", "mark", assign("globex-2026-11-23-am", "sam"))
        .expect_err("globex's shift is invisible to acme");
    let missing = harness
        .call::<AssignShift>("acme", "mark", assign("globex-1999-01-01-am", "sam"))
        .expect_err("no such shift");
    assert_eq!(foreign.code(), "shift_not_found");
    assert_eq!(missing.code(), "shift_not_found");
    assert_eq!(
        foreign.message().replace("globex-2026-11-23-am", "ID"),
        missing.message().replace("globex-1999-01-01-am", "ID")
    );
    assert_eq!(harness.roster(), RosterBook::seeded());
}

#[test]
fn assigning_a_non_member_fails() {
    let harness = Harness::seeded();
    let error = harness
        .call::<AssignShift>("globex", "hank", assign("globex-2026-11-28-am", "sam"))
        .expect_err("sam works for acme");
    assert_eq!(error.code(), "unknown_member");
    assert_eq!(harness.roster(), RosterBook::seeded());
}

#[test]
fn lists_only_the_open_shifts_when_asked() {
    let harness = Harness::seeded();
    let input = ListShiftsInput {
        open_only: true,
        ..seed_week(None)
    };
    let open = harness
        .call::<ListShifts>("acme", "mark", input.clone())
        .expect("lists");
    assert_eq!(open.shifts.len(), 6);
    assert!(open.shifts.iter().all(|shift| shift.assignee.is_none()));
    harness
        .call::<AssignShift>("acme", "mark", assign("acme-2026-11-28-am", "sam"))
        .expect("assigns");
    let open = harness
        .call::<ListShifts>("acme", "mark", input)
        .expect("lists");
    assert_eq!(open.shifts.len(), 5);
    assert!(
        open.shifts
            .iter()
            .all(|shift| shift.id != "acme-2026-11-28-am")
    );
}

#[test]
fn unassigning_undoes_an_assignment_of_an_open_shift() {
    let harness = Harness::seeded();
    let before = harness.roster();
    harness
        .call::<AssignShift>("acme", "mark", assign("acme-2026-11-28-am", "sam"))
        .expect("assigns");
    let shift = harness
        .call::<UnassignShift>("acme", "mark", shift_id("acme-2026-11-28-am"))
        .expect("unassigns");
    assert_eq!(shift.assignee, None);
    assert_eq!(harness.roster(), before);
}

#[test]
fn unassigning_another_orgs_shift_is_not_found() {
    let harness = Harness::seeded();
    let error = harness
        .call::<UnassignShift>("acme", "mark", shift_id("globex-2026-11-23-am"))
        .expect_err("globex's shift is invisible to acme");
    assert_eq!(error.code(), "shift_not_found");
    assert_eq!(harness.roster(), RosterBook::seeded());
}

#[test]
fn an_added_member_can_be_assigned_shifts() {
    let harness = Harness::seeded();
    let error = harness
        .call::<AssignShift>("acme", "mark", assign("acme-2026-11-28-am", "nina"))
        .expect_err("nina is not on the roster yet");
    assert_eq!(error.code(), "unknown_member");
    let member = harness
        .call::<AddMember>("acme", "mark", nina())
        .expect("adds");
    assert_eq!(
        member,
        RosterMember {
            user_id: "nina".to_owned(),
            name: "Nina Novak".to_owned(),
            role: "staff".to_owned(),
        }
    );
    let shift = harness
        .call::<AssignShift>("acme", "mark", assign("acme-2026-11-28-am", "nina"))
        .expect("nina is a member now");
    assert_eq!(shift.assignee.as_deref(), Some("nina"));
    // Only acme gained her.
    let error = harness
        .call::<AssignShift>("globex", "hank", assign("globex-2026-11-28-am", "nina"))
        .expect_err("nina is not in globex");
    assert_eq!(error.code(), "unknown_member");
}

#[test]
fn adding_an_existing_member_is_refused() {
    let harness = Harness::seeded();
    let sam = AddMemberInput {
        user_id: "sam".to_owned(),
        ..nina()
    };
    let error = harness
        .call::<AddMember>("acme", "mark", sam)
        .expect_err("sam is on acme's roster");
    assert_eq!(error.code(), "member_exists");
    assert!(error.message().contains("`sam`"), "{}", error.message());
    assert_eq!(harness.roster(), RosterBook::seeded());
}

#[test]
fn posted_notices_are_listed_for_the_org_only() {
    let harness = Harness::seeded();
    let notice = harness
        .call::<PostNotice>(
            "acme",
            "mark",
            PostNoticeInput {
                text: "Welcome to the team, Nina!".to_owned(),
            },
        )
        .expect("posts");
    assert_eq!(notice.id, "acme-notice-1");
    assert_eq!(notice.org_id, "acme");
    assert_eq!(notice.author, "mark");
    assert_eq!(notice.text, "Welcome to the team, Nina!");
    let acme = harness
        .call::<ListNotices>("acme", "sam", NoInput {})
        .expect("lists");
    assert_eq!(acme.notices, [notice]);
    let globex = harness
        .call::<ListNotices>("globex", "sue", NoInput {})
        .expect("lists");
    assert!(globex.notices.is_empty());
}

#[test]
fn clears_only_the_callers_week() {
    let harness = Harness::seeded();
    let outcome = harness
        .call::<ClearRoster>(
            "globex",
            "gina",
            ClearRosterInput {
                week_start: SEED_WEEK_START,
            },
        )
        .expect("clears");
    assert_eq!(outcome.org_id, "globex");
    assert_eq!(outcome.week_start, SEED_WEEK_START);
    assert_eq!(outcome.cleared, 8);
    let roster = harness.roster();
    let globex = roster.list(
        &OrgId::from("globex"),
        SEED_WEEK_START,
        date(2026, 11, 29),
        None,
    );
    assert!(globex.iter().all(|shift| shift.assignee.is_none()));
    let acme = OrgId::from("acme");
    assert_eq!(
        roster.list(&acme, SEED_WEEK_START, date(2026, 11, 29), None),
        RosterBook::seeded().list(&acme, SEED_WEEK_START, date(2026, 11, 29), None)
    );
}

#[test]
fn tools_are_linked_with_their_declared_specs() {
    let expected = [
        ("roster_list_shifts", Category::Read, "roster.shifts.read"),
        (
            "roster_propose_shift_swap",
            Category::Propose,
            "roster.swaps.propose",
        ),
        (
            "roster_assign_shift",
            Category::Execute,
            "roster.shifts.assign",
        ),
        (
            "roster_unassign_shift",
            Category::Execute,
            "roster.shifts.assign",
        ),
        ("roster_add_member", Category::Execute, "roster.members.add"),
        (
            "roster_post_notice",
            Category::Execute,
            "roster.notices.post",
        ),
        ("roster_list_notices", Category::Read, "roster.notices.read"),
        (
            "roster_clear_roster",
            Category::Restricted,
            "roster.roster.clear",
        ),
    ];
    for (name, category, permission) in expected {
        let entry = linked_tools()
            .find(|entry| entry.spec.name == name)
            .unwrap_or_else(|| panic!("{name} is linked"));
        assert_eq!(entry.spec.domain, "roster", "{name}");
        assert_eq!(entry.spec.category, category, "{name}");
        assert_eq!(entry.spec.permission, permission, "{name}");
        let input_schema = (entry.input_schema)().to_value();
        assert_eq!(find_org_id_property(&input_schema), None, "{name}");
    }
    assert_eq!(ListShifts::SPEC.intents.len(), 4);
    assert!(linked_domains().any(|domain| domain.name == "roster"));
}
