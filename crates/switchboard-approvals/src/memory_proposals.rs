//! The in-memory [`ProposalStore`]: a concurrent map of proposals by id, for one process.
//!
//! Each status change happens under the entry's bucket lock, which is what makes
//! [`decide`](ProposalStore::decide) a compare-and-set. Proposals are gone when the process
//! ends: a persistent backend implements the same trait for approvals across processes.

use jiff::Timestamp;
use switchboard_core::{OrgId, ProposalId};

use crate::proposals::{
    Decision, Proposal, ProposalStatus, ProposalStore, StoreError, TransitionError,
};

/// Proposals in memory.
#[derive(Default)]
pub struct MemoryProposalStore {
    proposals: scc::HashMap<ProposalId, Proposal>,
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
    fn insert(&self, proposal: Proposal) -> Result<(), StoreError> {
        self.proposals.upsert_sync(proposal.id.clone(), proposal);
        Ok(())
    }

    fn insert_new(&self, proposal: Proposal) -> Result<Option<Proposal>, StoreError> {
        match self.proposals.entry_sync(proposal.id.clone()) {
            scc::hash_map::Entry::Occupied(existing) if existing.org_id == proposal.org_id => {
                Ok(Some(existing.get().clone()))
            }
            // The id is another organisation's: not this proposal's to take or to show.
            scc::hash_map::Entry::Occupied(_) => Err(StoreError::new(
                format!("storing proposal {}", proposal.id),
                "the id is taken by a proposal of another organisation",
            )),
            scc::hash_map::Entry::Vacant(slot) => {
                slot.insert_entry(proposal);
                Ok(None)
            }
        }
    }

    fn get(&self, org_id: &OrgId, id: &ProposalId) -> Result<Option<Proposal>, StoreError> {
        Ok(self
            .proposals
            .read_sync(id, |_, proposal| proposal.clone())
            .filter(|proposal| proposal.org_id == *org_id))
    }

    fn list(&self, org_id: &OrgId) -> Result<Vec<Proposal>, StoreError> {
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
        Ok(found)
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
                Decision::Approve { .. } | Decision::Reject { .. } | Decision::Withdraw { .. } => {
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
            Decision::Withdraw { by, reason } => ProposalStatus::Withdrawn {
                by,
                at: now,
                reason,
            },
            // Not yet due: nothing to do.
            Decision::Expire => return Err(TransitionError::Closed(Box::new(proposal.clone()))),
        };
        Ok(proposal.clone())
    }

    fn record_outcome(
        &self,
        org_id: &OrgId,
        id: &ProposalId,
        outcome: &str,
    ) -> Result<(), StoreError> {
        if let Some(mut entry) = self.proposals.get_sync(id) {
            let proposal = entry.get_mut();
            if proposal.org_id == *org_id
                && let ProposalStatus::Approved { outcome: slot, .. } = &mut proposal.status
            {
                *slot = Some(outcome.to_owned());
            }
        }
        Ok(())
    }

    fn expire_overdue(&self, now: Timestamp) -> Result<Vec<Proposal>, StoreError> {
        let mut expired = Vec::new();
        self.proposals.iter_mut_sync(|mut entry| {
            let proposal = &mut *entry;
            if proposal.status.is_pending() && proposal.expires_at <= now {
                proposal.status = ProposalStatus::Expired { at: now };
                expired.push(proposal.clone());
            }
            true
        });
        Ok(expired)
    }
}
