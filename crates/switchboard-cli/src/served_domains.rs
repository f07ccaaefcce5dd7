//! `serve --domains`: which linked domains a node serves, and so which it leaves out.
//!
//! A node that serves one domain for others (`switchboard serve --http --domains roster`)
//! names it; every other linked domain is left out of its registry
//! (`RegistryBuilder::exclude_domain`), and with the domain go its tools, its prompts, its
//! pages, its tools' intent prompts and the exported workflows whose steps need its tools (the
//! registry, the navigator and the workflow engine each leave out what the registry excludes).
//! The core domain is always served: it answers who the caller is (`core_get_current_user`,
//! `/me`), which clients and the pages' links rely on. The conformance domain stays what
//! `--conformance` makes it. A name that is not a linked domain is a usage error, checked
//! before the runtime boots, naming the known ones.

use crate::app::UsageError;

/// The linked domains served whatever `--domains` names.
pub(crate) const ALWAYS_SERVED: &[&str] = &["core"];

/// The linked domains `--domains` can name: every one linked into this binary but the
/// conformance domain (which `--conformance` governs), sorted.
fn known() -> Vec<&'static str> {
    let mut known: Vec<&'static str> = switchboard_core::linked_domains()
        .map(|domain| domain.name)
        .filter(|name| *name != switchboard_domain_conformance::DOMAIN)
        .collect();
    known.sort_unstable();
    known.dedup();
    known
}

/// The linked domains to leave out when the node serves `named` (`--domains`), or none when
/// it serves every one (`None`). A name that is not a linked domain is refused with the known
/// ones, and the closest of them when one is close.
pub(crate) fn left_out(named: Option<&[String]>) -> Result<Vec<&'static str>, UsageError> {
    let Some(named) = named else {
        return Ok(Vec::new());
    };
    let known = known();
    for name in named {
        if !known.contains(&name.as_str()) {
            return Err(unknown(name, &known, "given with --domains"));
        }
    }
    Ok(known
        .into_iter()
        .filter(|domain| !ALWAYS_SERVED.contains(domain))
        .filter(|domain| !named.iter().any(|name| name == domain))
        .collect())
}

/// Refuses `name` unless it is a linked domain, naming where it was given (`source`), the
/// known domains and the closest of them.
pub(crate) fn check_known(name: &str, source: &str) -> Result<(), UsageError> {
    let known = known();
    if known.contains(&name) {
        Ok(())
    } else {
        Err(unknown(name, &known, source))
    }
}

fn unknown(name: &str, known: &[&str], source: &str) -> UsageError {
    let closest = known
        .iter()
        .map(|domain| (strsim::jaro_winkler(name, domain), *domain))
        .filter(|(similarity, _)| *similarity >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let suggestion = match closest {
        Some((_, domain)) => format!(": did you mean `{domain}`?"),
        None if name == switchboard_domain_conformance::DOMAIN => {
            " (its tools are served with --conformance).".to_owned()
        }
        None => ".".to_owned(),
    };
    UsageError::new(format!(
        "`{name}` ({source}) is not a domain linked into this binary{suggestion} \
         The linked domains: {}.",
        known.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    // The sample domains, linked as in the binary.
    use switchboard_domains as _;

    fn named(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn every_linked_domain_is_served_without_the_flag() {
        assert_eq!(left_out(None), Ok(Vec::new()));
    }

    #[test]
    fn the_domains_not_named_are_left_out_but_core() {
        assert_eq!(left_out(Some(&named(&["roster"]))), Ok(Vec::new()));
        assert_eq!(left_out(Some(&named(&["core"]))), Ok(vec!["roster"]));
        assert_eq!(left_out(Some(&named(&[]))), Ok(vec!["roster"]));
    }

    #[test]
    fn an_unknown_name_is_refused_with_the_known_ones_and_the_closest() {
        let error = left_out(Some(&named(&["roster", "rostr"]))).expect_err("unknown");
        let message = error.to_string();

        assert!(message.contains("`rostr`"), "{message}");
        assert!(message.contains("did you mean `roster`?"), "{message}");
        assert!(
            message.contains("The linked domains: core, roster."),
            "{message}"
        );
        let conformance = left_out(Some(&named(&["conformance"]))).expect_err("not by name");
        assert!(
            conformance.to_string().contains("--conformance"),
            "{conformance}"
        );
    }
}
