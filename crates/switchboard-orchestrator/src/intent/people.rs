//! People: what a `{name:user}` capture accepts, and the user id it means.
//!
//! A person says "assign shift X to Sam" or "to Sam Stone", not "to sam" the id. A user capture
//! therefore accepts a member's id, their full name, or their first name when no other member
//! of the organisation shares it, and hands the tool the id. The members come from the caller's
//! own organisation only (the orchestrator asks the directory with the caller's context), so a
//! name never resolves to someone in another organisation.

use serde::{Deserialize, Serialize};

use super::normalize;

/// The most words a user capture takes ("Anna Maria Lopez").
pub(crate) const MAX_NAME_WORDS: usize = 3;

/// A member of the caller's organisation, as a `{name:user}` capture knows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Person {
    /// The user id handed to the tool.
    pub user_id: String,
    /// The display name, such as "Sam Stone".
    pub name: String,
}

/// Who a user capture may name.
#[derive(Debug, Clone, Copy)]
pub enum People<'a> {
    /// The members are not loaded yet: routing stops at the first user capture it reaches and
    /// says so ([`NoMatch::needs_people`](super::NoMatch::needs_people)), so the caller loads
    /// them and routes again.
    NotLoaded,
    /// No directory is available: a user capture takes one word, verbatim, as a user id, and
    /// the tool checks it.
    NoDirectory,
    /// The members of the caller's organisation.
    Known(&'a [Person]),
}

/// The user id that `normalized_words` names among `people`, if exactly one member matches.
pub(crate) fn resolve<'p>(normalized_words: &str, people: &'p [Person]) -> Option<&'p str> {
    let by_id_or_name = people.iter().find(|person| {
        normalize(&person.user_id) == normalized_words
            || normalize(&person.name) == normalized_words
    });
    if let Some(person) = by_id_or_name {
        return Some(&person.user_id);
    }
    let mut by_first_name = people.iter().filter(|person| {
        normalize(&person.name)
            .split(' ')
            .next()
            .is_some_and(|first| first == normalized_words)
    });
    match (by_first_name.next(), by_first_name.next()) {
        (Some(only), None) => Some(&only.user_id),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn people() -> Vec<Person> {
        [
            ("sam", "Sam Stone"),
            ("mark", "Mark Mendez"),
            ("ann1", "Ann Lee"),
            ("ann2", "Ann Ray"),
        ]
        .map(|(user_id, name)| Person {
            user_id: user_id.to_owned(),
            name: name.to_owned(),
        })
        .to_vec()
    }

    #[test]
    fn resolves_ids_full_names_and_unique_first_names() {
        let people = people();
        assert_eq!(resolve("sam", &people), Some("sam"));
        assert_eq!(resolve("sam stone", &people), Some("sam"));
        assert_eq!(resolve("mark", &people), Some("mark"));
        assert_eq!(resolve("ann lee", &people), Some("ann1"));
        assert_eq!(resolve("ann2", &people), Some("ann2"));
    }

    #[test]
    fn an_ambiguous_or_unknown_name_resolves_to_nobody() {
        let people = people();
        assert_eq!(resolve("ann", &people), None, "two Anns");
        assert_eq!(resolve("bob", &people), None);
        assert_eq!(
            resolve("stone", &people),
            None,
            "last names alone are not enough"
        );
        assert_eq!(resolve("sam", &[]), None);
    }
}
