//! Sign-in sessions and the anti-CSRF tokens derived from them.
//!
//! Signing in trades a bearer token for a random session id (two v4 UUIDs, 244 random bits),
//! kept in memory beside the person it stands for; the cookie holds only that id. The token
//! itself is never stored or sent back, so a leaked cookie is worth one session of this
//! process (ended by signing out, by its lifetime, or by a restart) and never the token.
//!
//! Each form carries `blake3::keyed_hash(key, basis)`, where `key` is random per process and
//! the basis is the session id (or `operator` without sign-in). A page of another site cannot
//! read it, so it cannot forge a form post that carries it. It is compared as a
//! [`blake3::Hash`], whose equality runs in constant time.

use std::{
    collections::HashMap,
    sync::{Mutex, PoisonError},
    time::{Duration, Instant},
};

use crate::person::Person;

/// How long a sign-in lasts.
pub const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 60 * 60);
/// How many sign-ins are kept at once; a sign-in beyond that is refused until some expire.
pub const MAX_SESSIONS: usize = 10_000;

/// One signed-in person.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    /// Who signed in.
    pub(crate) person: Person,
    /// The session id the registry's audit records carry (not the cookie's secret id).
    pub(crate) audit_id: String,
    expires: Instant,
}

/// The live sessions, by their secret id, and the anti-CSRF key.
#[derive(Debug)]
pub(crate) struct Sessions {
    csrf_key: [u8; 32],
    by_id: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    /// No session, and a fresh anti-CSRF key.
    pub(crate) fn new() -> Self {
        let seed = [uuid::Uuid::new_v4(), uuid::Uuid::new_v4()];
        let mut material = Vec::with_capacity(32);
        for part in seed {
            material.extend_from_slice(part.as_bytes());
        }
        Self {
            csrf_key: blake3::derive_key("switchboard-web 2026 anti-CSRF key", &material),
            by_id: Mutex::new(HashMap::new()),
        }
    }

    /// Starts a session for `person`; its secret id, or `None` when [`MAX_SESSIONS`] are live.
    pub(crate) fn start(&self, person: Person) -> Option<String> {
        let id = format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        let now = Instant::now();
        let mut by_id = self.by_id.lock().unwrap_or_else(PoisonError::into_inner);
        if by_id.len() >= MAX_SESSIONS {
            by_id.retain(|_, session| session.expires > now);
            if by_id.len() >= MAX_SESSIONS {
                return None;
            }
        }
        by_id.insert(
            id.clone(),
            Session {
                person,
                audit_id: switchboard_core::mint_id("web-session"),
                expires: now + SESSION_LIFETIME,
            },
        );
        Some(id)
    }

    /// The live session of `id`.
    pub(crate) fn find(&self, id: &str) -> Option<Session> {
        let mut by_id = self.by_id.lock().unwrap_or_else(PoisonError::into_inner);
        match by_id.get(id) {
            Some(session) if session.expires > Instant::now() => Some(session.clone()),
            Some(_) => {
                by_id.remove(id);
                None
            }
            None => None,
        }
    }

    /// Ends the session of `id`, if there is one.
    pub(crate) fn end(&self, id: &str) {
        self.by_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
    }

    /// The anti-CSRF token of forms shown to the holder of `basis`.
    pub(crate) fn csrf_token(&self, basis: &str) -> String {
        blake3::keyed_hash(&self.csrf_key, basis.as_bytes())
            .to_hex()
            .to_string()
    }

    /// Whether `token` is the anti-CSRF token of `basis`.
    pub(crate) fn csrf_matches(&self, basis: &str, token: &str) -> bool {
        blake3::Hash::from_hex(token.trim())
            .is_ok_and(|given| given == blake3::keyed_hash(&self.csrf_key, basis.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_found_by_their_id_until_ended() {
        let sessions = Sessions::new();
        let id = sessions
            .start(Person::new("acme", "sam"))
            .expect("room for one");
        assert_eq!(id.len(), 64);
        let session = sessions.find(&id).expect("live");
        assert_eq!(session.person.describe(), "acme/sam");
        assert!(session.audit_id.starts_with("web-session-"));
        assert!(sessions.find("other").is_none());
        sessions.end(&id);
        assert!(sessions.find(&id).is_none());
    }

    #[test]
    fn csrf_tokens_belong_to_one_basis_and_one_process() {
        let sessions = Sessions::new();
        let token = sessions.csrf_token("a");
        assert!(sessions.csrf_matches("a", &token));
        assert!(!sessions.csrf_matches("b", &token));
        assert!(!sessions.csrf_matches("a", "not hex"));
        assert!(!Sessions::new().csrf_matches("a", &token));
    }
}
