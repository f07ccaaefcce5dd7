//! [`InFlight`]: the ids of the client's requests that rmcp is serving, so that a request
//! reusing the id of one still in flight is refused at once.
//!
//! rmcp keeps one cancellation token per request id and sends an answer only if its id still
//! has a token. A second request with the same id replaces the first one's token: the first
//! answer to come back takes the token and goes out, the other is dropped without a word, and
//! the client cannot tell which request the answer it got belongs to. So a request whose id is
//! in flight is answered by the transport with `-32600` (invalid request, with that id) and
//! never reaches rmcp; the first request still gets its own answer.
//!
//! An id is in flight from the moment its request is handed to rmcp until rmcp sends its answer
//! (a result or an error), or until the client cancels it (`notifications/cancelled`): rmcp
//! never answers a request it has cancelled (it drops the request's token, and the handler's
//! late answer, finding none, is dropped), so the id is free from then on.
//!
//! One case is left to the client: MCP forbids reusing an id within a session, and a client
//! that reuses a cancelled id before the cancelled call has returned may still be sent the
//! cancelled call's late answer for it (rmcp takes the new request's token for that answer).
//! Closing that gap would mean handing rmcp ids of our own and translating every place rmcp
//! writes a request id back (answers, errors, and the `_meta` subscription id of 2026-07-28
//! `subscriptions/listen` notifications and results), which is more machinery than a
//! spec-breaking client deserves.

use std::collections::HashSet;

use rmcp::model::RequestId;

/// The ids of the client's requests in flight.
#[derive(Debug, Default)]
pub(super) struct InFlight {
    ids: HashSet<RequestId>,
}

impl InFlight {
    /// Takes `id` for a new request: `false` if a request with that id is still in flight.
    pub(super) fn start(&mut self, id: &RequestId) -> bool {
        if self.ids.contains(id) {
            return false;
        }
        self.ids.insert(id.clone())
    }

    /// The request `id` is answered or cancelled: its id is free again. Freeing an id that is
    /// not in flight does nothing.
    pub(super) fn finish(&mut self, id: &RequestId) {
        self.ids.remove(id);
    }

    /// How many requests are in flight.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.ids.len()
    }

    /// The ids in flight.
    pub(super) fn ids(&self) -> Vec<RequestId> {
        self.ids.iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_in_flight_is_refused_until_its_request_is_finished() {
        let mut in_flight = InFlight::default();
        let string = RequestId::String("1".into());
        let number = RequestId::Number(1);
        assert!(in_flight.start(&string));
        assert!(!in_flight.start(&string));
        assert!(in_flight.start(&number), "\"1\" and 1 are different ids");
        in_flight.finish(&string);
        in_flight.finish(&string);
        assert!(in_flight.start(&string), "free again");
        assert_eq!(in_flight.len(), 2);
    }
}
