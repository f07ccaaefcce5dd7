//! The in-memory [`ProposalStore`]: a concurrent map of proposals by id, for one process.
//!
//! Each status change happens under the entry's bucket lock, which is what makes
//! [`decide`](ProposalStore::decide) a compare-and-set. Proposals are gone when the process
//! ends: a persistent backend implements the same trait for approvals across processes.

use jiff::Timestamp;
use switchboard_core::{OrgId, ProposalId};

use crate::proposals::{Decision, Proposal, ProposalStatus, ProposalStore, TransitionError};

/// Proposals in memory.
#[derive(Default)]
pub struct MemoryProposalStore {
    proposals: scc::HashMap<ProposalId, Proposal, foldhash::fast::RandomState>,
}

impl std::fmt::Debug for MemoryProposalStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryProposalStore")
            .field("proposals", &self.proposals.len())
            .finish()
    }
}

impl MemoryProposalStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl ProposalStore for MemoryProposalStore {
    fn insert(&self, proposal: Proposal) {
        self.proposals.upsert_sync(proposal.id.clone(), proposal);
    }

    fn get(&self, org_id: &OrgId, id: &ProposalId) -> Option<Proposal> {
        self.proposals
            .read_sync(id, |_, proposal| proposal.clone())
            .filter(|proposal| proposal.org_id == *org_id)
    }

    fn list(&self, org_id: &OrgId) -> Vec<Proposal> {
        let mut found = Vec::new();
        self.proposals.iter_sync(|_, proposal| {
            if proposal.org_id == *org_id {
                found.push(proposal.clone());
            }
            true
        });
        found.sort_by(|a, b| {
            b.created_at
                .cmp(&a.created_at)
                .then_with(|| a.id.cmp(&b.id))
        });
        found
    }

    fn decide(
        &self,
        org_id: &OrgId,
        id: &ProposalId,
        decision: Decision,
        now: Timestamp,
    ) -> Result<Proposal, TransitionError> {
        let Some(mut entry) = self.proposals.get_sync(id) else {
            return Err(TransitionError::NotFound);
        };
        let proposal = entry.get_mut();
        if proposal.org_id != *org_id {
            return Err(TransitionError::NotFound);
        }
        if !proposal.status.is_pending() {
            return Err(TransitionError::Closed(Box::new(proposal.clone())));
        }
        if proposal.expires_at <= now {
            proposal.status = ProposalStatus::Expired { at: now };
            let expired = Box::new(proposal.clone());
            return match decision {
                Decision::Expire => Ok(*expired),
                Decision::Approve { .. } | Decision::Reject { .. } => {
                    Err(TransitionError::Expired(expired))
                }
            };
        }
        proposal.status = match decision {
            Decision::Approve { by } => ProposalStatus::Approved {
                by,
                at: now,
                outcome: None,
            },
            Decision::Reject { by, feedback } => ProposalStatus::Rejected {
                by,
                at: now,
                feedback,
            },
            // Not yet due: nothing to do.
            Decision::Expire => return Err(TransitionError::Closed(Box::new(proposal.clone()))),
        };
        Ok(proposal.clone())
    }

    fn record_outcome(&self, org_id: &OrgId, id: &ProposalId, outcome: &str) {
        if let Some(mut entry) = self.proposals.get_sync(id) {
            let proposal = entry.get_mut();
            if proposal.org_id == *org_id
                && let ProposalStatus::Approved { outcome: slot, .. } = &mut proposal.status
            {
                *slot = Some(outcome.to_owned());
            }
        }
    }

    fn expire_overdue(&self, now: Timestamp) -> Vec<Proposal> {
        let mut expired = Vec::new();
        self.proposals.iter_mut_sync(|mut entry| {
            let proposal = &mut *entry;
            if proposal.status.is_pending() && proposal.expires_at <= now {
                proposal.status = ProposalStatus::Expired { at: now };
                expired.push(proposal.clone());
            }
            true
        });
        expired
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use jiff::SignedDuration;
    use serde_json::json;
    use switchboard_core::Initiator;

    use super::*;
    use crate::proposals::Proposer;

    fn proposal(id: &str, org: &str, ttl_secs: i64) -> Proposal {
        let now = Timestamp::now();
        Proposal {
            id: id.into(),
            org_id: org.into(),
            tool: Arc::from("roster_assign_shift"),
            params: Arc::new(json!({ "shift_id": "s1", "user_id": "sam" })),
            summary: "assign s1 to sam".to_owned(),
            proposer: Proposer {
                user_id: "sam".into(),
                session_id: "s".into(),
                correlation_id: "c".into(),
                initiator: Initiator::Agent,
                agent_type: None,
                thread_id: None,
                project_id: None,
            },
            created_at: now,
            expires_at: now
                .saturating_add(SignedDuration::from_secs(ttl_secs))
                .expect("in range"),
            status: ProposalStatus::Pending,
        }
    }

    #[test]
    fn a_decision_is_made_once() {
        let store = MemoryProposalStore::new();
        store.insert(proposal("p1", "acme", 60));
        let approve = |by: &str| Decision::Approve { by: by.into() };
        let now = Timestamp::now();
        let approved = store
            .decide(&"acme".into(), &"p1".into(), approve("mark"), now)
            .expect("pending");
        assert_eq!(approved.status.as_str(), "approved");
        let again = store.decide(&"acme".into(), &"p1".into(), approve("alice"), now);
        assert!(matches!(again, Err(TransitionError::Closed(_))));
        store.record_outcome(&"acme".into(), &"p1".into(), "ok");
        let stored = store.get(&"acme".into(), &"p1".into()).expect("stored");
        assert!(matches!(
            stored.status,
            ProposalStatus::Approved { outcome: Some(ref outcome), .. } if outcome == "ok"
        ));
    }

    #[test]
    fn another_org_sees_nothing() {
        let store = MemoryProposalStore::new();
        store.insert(proposal("p1", "acme", 60));
        assert!(store.get(&"globex".into(), &"p1".into()).is_none());
        assert!(store.list(&"globex".into()).is_empty());
        let decided = store.decide(
            &"globex".into(),
            &"p1".into(),
            Decision::Reject {
                by: "gina".into(),
                feedback: "no".into(),
            },
            Timestamp::now(),
        );
        assert_eq!(decided, Err(TransitionError::NotFound));
    }

    #[test]
    fn overdue_proposals_expire_once() {
        let store = MemoryProposalStore::new();
        store.insert(proposal("old", "acme", -1));
        store.insert(proposal("new", "acme", 60));
        let now = Timestamp::now();
        let expired = store.expire_overdue(now);
        assert_eq!(expired.len(), 1);
        assert_eq!(expired[0].id, "old");
        assert!(store.expire_overdue(now).is_empty());
        let late = store.decide(
            &"acme".into(),
            &"old".into(),
            Decision::Approve { by: "mark".into() },
            now,
        );
        assert!(matches!(late, Err(TransitionError::Closed(_))));
    }
}
