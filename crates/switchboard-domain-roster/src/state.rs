//! The roster's data and every rule that reads or changes it.
//!
//! [`RosterBook`] keeps each organisation's members and shifts apart, and every method takes the
//! organisation it acts for: there is no way to list, find or change a shift without naming
//! one, and nothing in one organisation is reachable through another. This module is pure data
//! and logic (no I/O, no context), so the tools stay thin, the rules are tested here, and every
//! store (memory, SQLite, PostgreSQL) applies the same rules: a store keeps each organisation's
//! part, an [`OrgRoster`], as one record, and a change is a function of the book.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

use jiff::{
    Timestamp,
    civil::{Date, Weekday},
};
use serde::{Deserialize, Serialize};
use switchboard_core::OrgId;

use crate::{
    error::RosterError,
    model::{Member, Notice, Shift},
    seed,
};

/// One organisation's part of the roster: what a store keeps as one record (its fields are
/// the book's business; a store only serializes it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrgRoster {
    /// By user id.
    members: BTreeMap<String, Member>,
    /// By shift id.
    shifts: BTreeMap<String, Shift>,
    /// Mondays of the weeks whose shifts may no longer change (payroll closed).
    locked_weeks: BTreeSet<Date>,
    /// The notice board, oldest first.
    notices: Vec<Notice>,
}

/// Organisations' members and shifts: every one a store holds, or the one part a call loaded.
///
/// Each part is shared (`Arc`) and copied on its first change, so the in-memory store hands a
/// read its current part without copying it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RosterBook {
    orgs: BTreeMap<String, Arc<OrgRoster>>,
}

impl RosterBook {
    /// An empty roster.
    pub fn new() -> Self {
        Self::default()
    }

    /// The sample roster: `acme` and `globex`, with shifts in the week of
    /// [`SEED_WEEK_START`](crate::SEED_WEEK_START).
    pub fn seeded() -> Self {
        let mut roster = Self::new();
        seed::seed(&mut roster);
        roster
    }

    /// A book holding only `part`, as the roster of `org_id`.
    pub fn of_org(org_id: &OrgId, part: impl Into<Arc<OrgRoster>>) -> Self {
        let mut book = Self::new();
        book.put_org_part(org_id, part);
        book
    }

    /// Puts `part` in the book as the roster of `org_id`, replacing what it held.
    pub fn put_org_part(&mut self, org_id: &OrgId, part: impl Into<Arc<OrgRoster>>) {
        self.orgs.insert(org_id.to_string(), part.into());
    }

    /// The part of `org_id`, if the book holds one.
    pub fn org_part(&self, org_id: &OrgId) -> Option<&OrgRoster> {
        self.org(org_id)
    }

    /// Takes the part of `org_id` out of the book (an empty one if it holds none).
    pub fn take_org_part(&mut self, org_id: &OrgId) -> Arc<OrgRoster> {
        self.orgs.remove(org_id.as_str()).unwrap_or_default()
    }

    /// Every organisation's part, by organisation.
    pub fn into_parts(self) -> impl Iterator<Item = (OrgId, Arc<OrgRoster>)> {
        self.orgs
            .into_iter()
            .map(|(org_id, part)| (OrgId::from(org_id), part))
    }

    /// Adds `member` to the roster of `org_id`, replacing a member with the same user id.
    pub fn insert_member(&mut self, org_id: &OrgId, member: Member) {
        self.org_entry(org_id)
            .members
            .insert(member.user_id.clone(), member);
    }

    /// Adds `shift` to the roster of its `org_id`, replacing a shift with the same id there.
    pub fn insert_shift(&mut self, shift: Shift) {
        self.org_entry(&OrgId::from(shift.org_id.as_str()))
            .shifts
            .insert(shift.id.clone(), shift);
    }

    /// Puts `member` on the roster of `org_id` and returns it; refuses a user id the
    /// organisation's roster already has.
    pub fn add_member(&mut self, org_id: &OrgId, member: Member) -> Result<Member, RosterError> {
        if self.is_member(org_id, &member.user_id) {
            return Err(RosterError::MemberExists {
                user_id: member.user_id,
            });
        }
        self.insert_member(org_id, member.clone());
        Ok(member)
    }

    /// The member `user_id` of `org_id`.
    pub fn member(&self, org_id: &OrgId, user_id: &str) -> Result<&Member, RosterError> {
        self.org(org_id)
            .and_then(|org| org.members.get(user_id))
            .ok_or_else(|| RosterError::UnknownMember {
                user_id: user_id.to_owned(),
            })
    }

    /// Whether `user_id` is on the roster of `org_id`.
    pub fn is_member(&self, org_id: &OrgId, user_id: &str) -> bool {
        self.member(org_id, user_id).is_ok()
    }

    /// The members of `org_id`, by user id.
    pub fn members(&self, org_id: &OrgId) -> impl Iterator<Item = &Member> {
        self.org(org_id)
            .into_iter()
            .flat_map(|org| org.members.values())
    }

    /// The shifts of `org_id` dated `from..=to`, only those of `assignee` if given, sorted by
    /// date, then start time, then id.
    pub fn list(&self, org_id: &OrgId, from: Date, to: Date, assignee: Option<&str>) -> Vec<Shift> {
        self.list_matching(org_id, from, to, |shift| {
            assignee.is_none_or(|user| shift.assignee.as_deref() == Some(user))
        })
    }

    /// The open shifts (no assignee) of `org_id` dated `from..=to`, sorted like [`Self::list`].
    pub fn list_open(&self, org_id: &OrgId, from: Date, to: Date) -> Vec<Shift> {
        self.list_matching(org_id, from, to, |shift| shift.assignee.is_none())
    }

    fn list_matching(
        &self,
        org_id: &OrgId,
        from: Date,
        to: Date,
        keep: impl Fn(&Shift) -> bool,
    ) -> Vec<Shift> {
        let mut shifts: Vec<Shift> = self
            .org(org_id)
            .into_iter()
            .flat_map(|org| org.shifts.values())
            .filter(|shift| (from..=to).contains(&shift.date))
            .filter(|shift| keep(shift))
            .cloned()
            .collect();
        shifts.sort_by(|a, b| (a.date, a.start, &a.id).cmp(&(b.date, b.start, &b.id)));
        shifts
    }

    /// The shift `shift_id` of `org_id`. A shift of another organisation is not found, exactly
    /// like an id that does not exist at all.
    pub fn find(&self, org_id: &OrgId, shift_id: &str) -> Result<&Shift, RosterError> {
        self.org(org_id)
            .and_then(|org| org.shifts.get(shift_id))
            .ok_or_else(|| shift_not_found(shift_id))
    }

    /// Assigns shift `shift_id` of `org_id` to its member `user_id` and returns the updated
    /// shift. The shift is checked first, then the member.
    pub fn assign(
        &mut self,
        org_id: &OrgId,
        shift_id: &str,
        user_id: &str,
    ) -> Result<Shift, RosterError> {
        let OrgRoster {
            members, shifts, ..
        } = self
            .org_mut(org_id)
            .ok_or_else(|| shift_not_found(shift_id))?;
        let shift = shifts
            .get_mut(shift_id)
            .ok_or_else(|| shift_not_found(shift_id))?;
        if !members.contains_key(user_id) {
            return Err(RosterError::UnknownMember {
                user_id: user_id.to_owned(),
            });
        }
        shift.assignee = Some(user_id.to_owned());
        Ok(shift.clone())
    }

    /// Removes the assignee of shift `shift_id` of `org_id`, leaving it open, and returns the
    /// updated shift. A shift that is already open stays open, so undoing an assignment twice
    /// is harmless.
    pub fn unassign(&mut self, org_id: &OrgId, shift_id: &str) -> Result<Shift, RosterError> {
        let shift = self
            .org_mut(org_id)
            .and_then(|org| org.shifts.get_mut(shift_id))
            .ok_or_else(|| shift_not_found(shift_id))?;
        shift.assignee = None;
        Ok(shift.clone())
    }

    /// Gives the open shift `shift_id` of `org_id` to its member `user_id` and returns it;
    /// refuses a shift someone already works.
    pub fn claim(
        &mut self,
        org_id: &OrgId,
        shift_id: &str,
        user_id: &str,
    ) -> Result<Shift, RosterError> {
        if let Some(current) = &self.find(org_id, shift_id)?.assignee {
            return Err(RosterError::ShiftTaken {
                shift_id: shift_id.to_owned(),
                user_id: current.clone(),
            });
        }
        self.assign(org_id, shift_id, user_id)
    }

    /// Unassigns every shift of `org_id` in the week starting Monday `week_start` and returns
    /// how many had an assignee. Other organisations are untouched.
    pub fn clear_week(&mut self, org_id: &OrgId, week_start: Date) -> Result<usize, RosterError> {
        let weekday = week_start.weekday();
        if weekday != Weekday::Monday {
            return Err(RosterError::NotAMonday {
                date: week_start,
                weekday,
            });
        }
        let Some(org) = self.org_mut(org_id) else {
            return Ok(0);
        };
        let cleared = org
            .shifts
            .values_mut()
            .filter(|shift| same_iso_week(shift.date, week_start))
            .filter_map(|shift| shift.assignee.take())
            .count();
        Ok(cleared)
    }

    /// Locks the week starting Monday `week_start` of `org_id`: its shifts may no longer be
    /// assigned or cleared through the tools (their gates refuse).
    pub fn lock_week(&mut self, org_id: &OrgId, week_start: Date) -> Result<(), RosterError> {
        let weekday = week_start.weekday();
        if weekday != Weekday::Monday {
            return Err(RosterError::NotAMonday {
                date: week_start,
                weekday,
            });
        }
        self.org_entry(org_id).locked_weeks.insert(week_start);
        Ok(())
    }

    /// The Monday of the locked week that `date` falls in, if that week is locked in `org_id`.
    pub fn locked_week_of(&self, org_id: &OrgId, date: Date) -> Option<Date> {
        self.org(org_id)?
            .locked_weeks
            .iter()
            .copied()
            .find(|monday| same_iso_week(*monday, date))
    }

    /// Posts a notice by `author` to the board of `org_id`, dated `posted_at`, and returns it.
    /// Its id is the organisation followed by its position on the board (`acme-notice-1`).
    pub fn post_notice(
        &mut self,
        org_id: &OrgId,
        author: &str,
        text: String,
        posted_at: Timestamp,
    ) -> Notice {
        let notices = &mut self.org_entry(org_id).notices;
        let notice = Notice {
            id: format!("{org_id}-notice-{}", notices.len() + 1),
            org_id: org_id.to_string(),
            author: author.to_owned(),
            text,
            posted_at,
        };
        notices.push(notice.clone());
        notice
    }

    /// The notices on the board of `org_id`, oldest first; none for an unknown organisation.
    pub fn notices(&self, org_id: &OrgId) -> &[Notice] {
        self.org(org_id).map_or(&[], |org| org.notices.as_slice())
    }

    fn org(&self, org_id: &OrgId) -> Option<&OrgRoster> {
        self.orgs.get(org_id.as_str()).map(Arc::as_ref)
    }

    /// The part of `org_id` to change, copied first if it is shared.
    fn org_mut(&mut self, org_id: &OrgId) -> Option<&mut OrgRoster> {
        self.orgs.get_mut(org_id.as_str()).map(Arc::make_mut)
    }

    /// The part of `org_id` to change, made empty first if the book holds none.
    fn org_entry(&mut self, org_id: &OrgId) -> &mut OrgRoster {
        Arc::make_mut(self.orgs.entry(org_id.to_string()).or_default())
    }
}

fn shift_not_found(shift_id: &str) -> RosterError {
    RosterError::ShiftNotFound {
        shift_id: shift_id.to_owned(),
    }
}

/// Whether two days fall in the same Monday-to-Sunday (ISO 8601) week.
fn same_iso_week(a: Date, b: Date) -> bool {
    let (a, b) = (a.iso_week_date(), b.iso_week_date());
    (a.year(), a.week()) == (b.year(), b.week())
}

#[cfg(test)]
mod tests {
    use jiff::civil::date;

    use super::*;
    use crate::SEED_WEEK_START;

    fn acme() -> OrgId {
        OrgId::from("acme")
    }

    fn globex() -> OrgId {
        OrgId::from("globex")
    }

    fn seed_week(roster: &RosterBook, org_id: &OrgId) -> Vec<Shift> {
        roster.list(org_id, SEED_WEEK_START, date(2026, 11, 29), None)
    }

    #[test]
    fn each_org_sees_only_its_own_shifts() {
        let roster = RosterBook::seeded();
        for org_id in [acme(), globex()] {
            let shifts = seed_week(&roster, &org_id);
            assert_eq!(shifts.len(), 14, "{org_id}");
            assert!(shifts.iter().all(|shift| shift.org_id == org_id.as_str()));
        }
        assert!(seed_week(&roster, &OrgId::from("initech")).is_empty());
    }

    #[test]
    fn lists_sorted_by_date_then_start_within_the_range() {
        let roster = RosterBook::seeded();
        let shifts = roster.list(&acme(), date(2026, 11, 24), date(2026, 11, 25), None);
        let ids: Vec<&str> = shifts.iter().map(|shift| shift.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "acme-2026-11-24-am",
                "acme-2026-11-24-pm",
                "acme-2026-11-25-am",
                "acme-2026-11-25-pm",
            ]
        );
    }

    #[test]
    fn filters_by_assignee() {
        let roster = RosterBook::seeded();
        let shifts = roster.list(&acme(), SEED_WEEK_START, date(2026, 11, 29), Some("mark"));
        assert_eq!(shifts.len(), 3);
        assert!(shifts.iter().all(|s| s.assignee.as_deref() == Some("mark")));
        // Hank is globex's manager: filtering acme's roster by him finds nothing.
        assert!(
            roster
                .list(&acme(), SEED_WEEK_START, date(2026, 11, 29), Some("hank"))
                .is_empty()
        );
    }

    #[test]
    fn another_orgs_shift_is_not_found_like_a_missing_one() {
        let roster = RosterBook::seeded();
        assert!(roster.find(&globex(), "globex-2026-11-23-am").is_ok());
        let foreign = roster.find(&acme(), "globex-2026-11-23-am");
        let missing = roster.find(&acme(), "acme-1999-01-01-am");
        assert_eq!(
            foreign,
            Err(RosterError::ShiftNotFound {
                shift_id: "globex-2026-11-23-am".to_owned()
            })
        );
        assert_eq!(
            foreign.map_err(|error| error.code()),
            missing.map_err(|error| error.code())
        );
    }

    #[test]
    fn assigns_a_member_of_the_same_org() {
        let mut roster = RosterBook::seeded();
        let shift = roster
            .assign(&acme(), "acme-2026-11-28-am", "alice")
            .expect("alice is in acme");
        assert_eq!(shift.assignee.as_deref(), Some("alice"));
        let stored = roster.find(&acme(), "acme-2026-11-28-am").expect("exists");
        assert_eq!(stored, &shift);
    }

    #[test]
    fn assigning_across_orgs_fails_and_changes_nothing() {
        let mut roster = RosterBook::seeded();
        let before = roster.clone();
        // A globex user on an acme shift.
        assert_eq!(
            roster.assign(&acme(), "acme-2026-11-28-am", "gina"),
            Err(RosterError::UnknownMember {
                user_id: "gina".to_owned()
            })
        );
        // A globex shift, assigned by acme, even to an acme member.
        assert_eq!(
            roster
                .assign(&acme(), "globex-2026-11-28-am", "sam")
                .map_err(|error| error.code()),
            Err("shift_not_found")
        );
        // An org the roster does not know.
        assert_eq!(
            roster
                .assign(&OrgId::from("initech"), "acme-2026-11-28-am", "sam")
                .map_err(|error| error.code()),
            Err("shift_not_found")
        );
        assert_eq!(roster, before);
    }

    #[test]
    fn lists_only_open_shifts() {
        let roster = RosterBook::seeded();
        let open = roster.list_open(&acme(), SEED_WEEK_START, date(2026, 11, 29));
        // Tuesday and Thursday evenings, and both weekend days' shifts.
        let ids: Vec<&str> = open.iter().map(|shift| shift.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "acme-2026-11-24-pm",
                "acme-2026-11-26-pm",
                "acme-2026-11-28-am",
                "acme-2026-11-28-pm",
                "acme-2026-11-29-am",
                "acme-2026-11-29-pm",
            ]
        );
        assert!(open.iter().all(|shift| shift.assignee.is_none()));
    }

    #[test]
    fn unassigning_opens_the_shift_and_is_harmless_twice() {
        let mut roster = RosterBook::seeded();
        let shift = roster
            .unassign(&acme(), "acme-2026-11-23-am")
            .expect("exists");
        assert_eq!(shift.assignee, None);
        assert_eq!(roster.find(&acme(), "acme-2026-11-23-am"), Ok(&shift));
        assert_eq!(roster.unassign(&acme(), "acme-2026-11-23-am"), Ok(shift));
        assert_eq!(
            roster
                .unassign(&acme(), "globex-2026-11-23-am")
                .map_err(|error| error.code()),
            Err("shift_not_found")
        );
        let globex_shift = roster
            .find(&globex(), "globex-2026-11-23-am")
            .expect("exists");
        assert_eq!(globex_shift.assignee.as_deref(), Some("sue"));
    }

    #[test]
    fn adds_a_member_once_per_org() {
        let mut roster = RosterBook::seeded();
        let nina = Member {
            user_id: "nina".to_owned(),
            name: "Nina Novak".to_owned(),
            role: "staff".to_owned(),
        };
        assert_eq!(roster.add_member(&acme(), nina.clone()), Ok(nina.clone()));
        assert!(roster.is_member(&acme(), "nina"));
        assert!(!roster.is_member(&globex(), "nina"));
        let before = roster.clone();
        let mut renamed = nina.clone();
        renamed.name = "Someone Else".to_owned();
        assert_eq!(
            roster.add_member(&acme(), renamed),
            Err(RosterError::MemberExists {
                user_id: "nina".to_owned()
            })
        );
        assert_eq!(roster, before);
        // The same id is free in another organisation.
        assert!(roster.add_member(&globex(), nina).is_ok());
    }

    #[test]
    fn notices_are_numbered_per_org() {
        let mut roster = RosterBook::seeded();
        let at = Timestamp::UNIX_EPOCH;
        let first = roster.post_notice(&acme(), "mark", "Welcome!".to_owned(), at);
        let second = roster.post_notice(&acme(), "alice", "Party on Friday".to_owned(), at);
        let other = roster.post_notice(&globex(), "hank", "Hello".to_owned(), at);
        assert_eq!(first.id, "acme-notice-1");
        assert_eq!(second.id, "acme-notice-2");
        assert_eq!(other.id, "globex-notice-1");
        assert_eq!(roster.notices(&acme()), [first, second]);
        assert_eq!(roster.notices(&globex()), [other]);
        assert!(roster.notices(&OrgId::from("initech")).is_empty());
    }

    #[test]
    fn membership_is_per_org() {
        let roster = RosterBook::seeded();
        assert!(roster.is_member(&acme(), "sam"));
        assert!(!roster.is_member(&acme(), "sue"));
        assert!(roster.is_member(&globex(), "sue"));
        assert_eq!(
            roster.member(&globex(), "hank").map(|m| m.role.as_str()),
            Ok("manager")
        );
    }

    #[test]
    fn clearing_one_orgs_week_leaves_the_other_org_untouched() {
        let mut roster = RosterBook::seeded();
        let globex_before = seed_week(&roster, &globex());
        let cleared = roster
            .clear_week(&acme(), SEED_WEEK_START)
            .expect("a Monday");
        // Five weekday mornings and three evenings were assigned.
        assert_eq!(cleared, 8);
        assert!(
            seed_week(&roster, &acme())
                .iter()
                .all(|shift| shift.assignee.is_none())
        );
        assert_eq!(seed_week(&roster, &globex()), globex_before);
        assert_eq!(roster.clear_week(&acme(), SEED_WEEK_START), Ok(0));
    }

    #[test]
    fn clearing_touches_only_that_week() {
        let mut roster = RosterBook::seeded();
        assert_eq!(roster.clear_week(&acme(), date(2026, 11, 30)), Ok(0));
        assert_eq!(roster.clear_week(&acme(), date(2026, 11, 16)), Ok(0));
        assert_eq!(roster, RosterBook::seeded());
    }

    #[test]
    fn clearing_needs_a_monday() {
        let mut roster = RosterBook::seeded();
        assert_eq!(
            roster
                .clear_week(&acme(), date(2026, 11, 25))
                .map_err(|error| error.code()),
            Err("week_start_not_monday")
        );
        assert_eq!(roster, RosterBook::seeded());
    }

    #[test]
    fn locked_weeks_are_per_org_and_named_by_their_monday() {
        let mut roster = RosterBook::new();
        let monday = date(2026, 11, 23);
        roster.lock_week(&acme(), monday).expect("a Monday");
        assert_eq!(
            roster.locked_week_of(&acme(), date(2026, 11, 29)),
            Some(monday)
        );
        assert_eq!(roster.locked_week_of(&acme(), date(2026, 11, 30)), None);
        assert_eq!(roster.locked_week_of(&globex(), date(2026, 11, 25)), None);
        assert!(roster.lock_week(&acme(), date(2026, 11, 24)).is_err());
    }

    #[test]
    fn shift_ids_are_unique_across_orgs() {
        let roster = RosterBook::seeded();
        let mut ids: Vec<String> = [acme(), globex()]
            .iter()
            .flat_map(|org_id| seed_week(&roster, org_id))
            .map(|shift| shift.id)
            .collect();
        let total = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), total);
    }
}
