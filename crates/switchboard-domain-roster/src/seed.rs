//! The sample data the `roster` domain starts with.
//!
//! Two organisations, `acme` and `globex`, each with an admin, a manager and a staff member,
//! and a morning and an evening shift on every day of the week starting Monday 2026-11-23.
//! Weekday mornings go to the staff member, Monday/Wednesday/Friday evenings to the manager,
//! and the rest are open. Shift ids start with the organisation, so they are unique across orgs.
//! The week before, starting [`LOCKED_WEEK_START`], is locked (its payroll is closed); it holds
//! one open shift per organisation (Friday evening), which the tools' gates keep unchanged.

use jiff::{
    ToSpan,
    civil::{Date, Time, date, time},
};
use switchboard_core::OrgId;

use crate::{
    model::{Member, Shift},
    state::RosterBook,
};

/// The Monday of the seeded week.
pub const SEED_WEEK_START: Date = date(2026, 11, 23);

/// The Monday of the seeded locked week (the week before [`SEED_WEEK_START`]).
pub const LOCKED_WEEK_START: Date = date(2026, 11, 16);

/// The Friday of the locked week, whose evening shift is seeded open in each organisation.
const LOCKED_SHIFT_DAY: Date = date(2026, 11, 20);

/// One seeded organisation.
struct SeedOrg {
    org_id: &'static str,
    position: &'static str,
    /// (user id, display name, role)
    members: [(&'static str, &'static str, &'static str); 3],
    manager: &'static str,
    staff: &'static str,
}

const ORGS: [SeedOrg; 2] = [
    SeedOrg {
        org_id: "acme",
        position: "front desk",
        members: [
            ("alice", "Alice Archer", "admin"),
            ("mark", "Mark Mendez", "manager"),
            ("sam", "Sam Stone", "staff"),
        ],
        manager: "mark",
        staff: "sam",
    },
    SeedOrg {
        org_id: "globex",
        position: "dispatch",
        members: [
            ("gina", "Gina Gold", "admin"),
            ("hank", "Hank Hill", "manager"),
            ("sue", "Sue Storm", "staff"),
        ],
        manager: "hank",
        staff: "sue",
    },
];

/// (id suffix, start, end)
const SLOTS: [(&str, Time, Time); 2] = [
    ("am", time(8, 0, 0, 0), time(14, 0, 0, 0)),
    ("pm", time(14, 0, 0, 0), time(20, 0, 0, 0)),
];

/// Fills `roster` with the sample organisations, members and shifts.
pub(crate) fn seed(roster: &mut RosterBook) {
    for org in &ORGS {
        let org_id = OrgId::from(org.org_id);
        for (user_id, name, role) in org.members {
            roster.insert_member(
                &org_id,
                Member {
                    user_id: user_id.to_owned(),
                    name: name.to_owned(),
                    role: role.to_owned(),
                },
            );
        }
        for (day_index, day) in SEED_WEEK_START.series(1.day()).take(7).enumerate() {
            let weekday = day_index < 5;
            for (slot, start, end) in SLOTS {
                let assignee = match slot {
                    "am" if weekday => Some(org.staff),
                    "pm" if weekday && day_index % 2 == 0 => Some(org.manager),
                    _ => None,
                };
                roster.insert_shift(Shift {
                    id: format!("{}-{day}-{slot}", org.org_id),
                    org_id: org.org_id.to_owned(),
                    date: day,
                    start,
                    end,
                    position: org.position.to_owned(),
                    assignee: assignee.map(str::to_owned),
                });
            }
        }
        let (slot, start, end) = SLOTS[1];
        roster.insert_shift(Shift {
            id: format!("{}-{LOCKED_SHIFT_DAY}-{slot}", org.org_id),
            org_id: org.org_id.to_owned(),
            date: LOCKED_SHIFT_DAY,
            start,
            end,
            position: org.position.to_owned(),
            assignee: None,
        });
        if let Err(error) = roster.lock_week(&org_id, LOCKED_WEEK_START) {
            unreachable!("the locked week starts on a Monday: {error}");
        }
    }
}
