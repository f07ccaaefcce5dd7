//! Both ends of the identity statement on the cluster link: the sending node signs each call
//! for the peer and domain it goes to ([`PeerIssuer`]), and the serving node's
//! [`StatementVerifier`] reads the caller from it, taking as the sender the peer whose key
//! verified it (a `ractor_cluster` message does not name its sender).

use std::sync::Arc;

use switchboard_core::BoxFuture;
use switchboard_registry::{
    LinkedCall, RemoteCall, RemoteCallVerifier, StatementIssuer, StatementNotIssued,
    StatementRefused, VerifiedCaller,
};

use crate::{Audience, Expected, StatementSigner, StatementVerifier};

/// Signs each call a cluster link sends to the node `peer`: the statement's `aud` is
/// `<peer>/<domain>`.
#[derive(Debug, Clone)]
pub struct PeerIssuer {
    signer: Arc<StatementSigner>,
    peer: String,
}

impl PeerIssuer {
    /// Statements signed by `signer` for the node `peer`.
    pub fn new(signer: Arc<StatementSigner>, peer: impl Into<String>) -> Self {
        Self {
            signer,
            peer: peer.into(),
        }
    }
}

impl StatementIssuer for PeerIssuer {
    fn issue(&self, domain: &str, call: &LinkedCall<'_>) -> Result<String, StatementNotIssued> {
        self.signer
            .sign(&Audience::new(self.peer.as_str(), domain), call)
            .map_err(|error| StatementNotIssued::new(error.to_string()))
    }
}

/// The serving side: the caller of a call that came over the cluster link is the one its
/// statement names, once [`StatementVerifier::verify_by_key`] accepts it (the sender being
/// the peer whose key signed it). The refusal's reason goes to this node's log only.
impl RemoteCallVerifier for StatementVerifier {
    fn verify<'a>(
        &'a self,
        domain: &'a str,
        call: &'a RemoteCall,
    ) -> BoxFuture<'a, Result<VerifiedCaller, StatementRefused>> {
        Box::pin(async move {
            let expected = Expected {
                tool: &call.tool,
                domain,
                params: &call.params,
            };
            self.verify_by_key(&call.statement, expected)
                .map(|verified| VerifiedCaller::new(verified.context, verified.action))
                .map_err(|refused| StatementRefused::new(refused.to_string()))
        })
    }
}
