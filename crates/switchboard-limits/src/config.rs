//! The `[limits]` table of a config file, read with serde and checked key by key, so that a
//! typo is an error naming the key and what it accepts:
//!
//! ```toml
//! [limits]
//! per_org = "600/min"                          # every call of an organisation
//! per_user = { rate = "60/min", burst = 10 }   # each user's calls
//!
//! [limits.tools]
//! roster_assign_shift = "10/min"                          # per user (the default)
//! roster_publish_week = { rate = "2/h", per = "org" }     # the organisation's calls together
//! ```

use std::{collections::BTreeMap, fmt, num::NonZeroU32};

use serde::{
    Deserialize,
    de::{self, MapAccess, Visitor, value::MapAccessDeserializer},
};

use crate::rule::{Rule, Scope};

/// The rate limits a service sets: per organisation, per user, and per tool.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(try_from = "LimitsTable")]
pub struct Limits {
    /// Every call of an organisation.
    pub per_org: Option<Rule>,
    /// Every call of one user of one organisation.
    pub per_user: Option<Rule>,
    /// The calls of one tool, by tool name, counted per organisation or per user.
    pub tools: BTreeMap<String, (Rule, Scope)>,
}

impl Limits {
    /// Whether no limit is set (a service then needs no layer).
    pub fn is_empty(&self) -> bool {
        self.per_org.is_none() && self.per_user.is_none() && self.tools.is_empty()
    }
}

/// A `[limits]` entry that is not a usable limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{key}` in [limits]: {reason}")]
pub struct LimitsError {
    /// The key, as the file writes it (`per_user`, `tools.roster_assign_shift`).
    pub key: String,
    /// What is wrong and what is accepted.
    pub reason: String,
}

/// `[limits]` as the file has it, before its values are checked.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitsTable {
    per_org: Option<RuleText>,
    per_user: Option<RuleText>,
    #[serde(default)]
    tools: BTreeMap<String, RuleText>,
}

impl TryFrom<LimitsTable> for Limits {
    type Error = LimitsError;

    fn try_from(table: LimitsTable) -> Result<Self, Self::Error> {
        let plain = |key: &str, text: Option<RuleText>, scope: Scope| {
            text.map(|text| {
                let (rule, per) = text.check(key, scope)?;
                if per != scope {
                    return Err(LimitsError {
                        key: key.to_owned(),
                        reason: "`per` is for the limits of [limits.tools] only".to_owned(),
                    });
                }
                Ok(rule)
            })
            .transpose()
        };
        let mut tools = BTreeMap::new();
        for (tool, text) in table.tools {
            let checked = text.check(&format!("tools.{tool}"), Scope::User)?;
            tools.insert(tool, checked);
        }
        Ok(Self {
            per_org: plain("per_org", table.per_org, Scope::Org)?,
            per_user: plain("per_user", table.per_user, Scope::User)?,
            tools,
        })
    }
}

/// One limit as written: `"60/min"`, or `{ rate = "60/min", burst = 10, per = "org" }`.
#[derive(Debug, Default)]
struct RuleText {
    rate: String,
    burst: Option<u32>,
    per: Option<String>,
}

impl RuleText {
    /// The rule and its scope (`scope` unless `per` says otherwise), or what is wrong with it.
    fn check(self, key: &str, scope: Scope) -> Result<(Rule, Scope), LimitsError> {
        let error = |reason: String| LimitsError {
            key: key.to_owned(),
            reason,
        };
        let mut rule: Rule = self.rate.parse().map_err(error)?;
        if let Some(burst) = self.burst {
            let burst = NonZeroU32::new(burst)
                .ok_or_else(|| error("`burst = 0` admits no call: use 1 or more".to_owned()))?;
            rule = rule.with_burst(burst);
        }
        let scope = match self.per {
            Some(per) => per.parse().map_err(error)?,
            None => scope,
        };
        Ok((rule, scope))
    }
}

/// The table form of a limit.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleTable {
    rate: String,
    burst: Option<u32>,
    per: Option<String>,
}

impl<'de> Deserialize<'de> for RuleText {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Text;

        impl<'de> Visitor<'de> for Text {
            type Value = RuleText;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a rate such as \"60/min\", or a table such as \
                     { rate = \"60/min\", burst = 10, per = \"org\" }",
                )
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<RuleText, E> {
                Ok(RuleText {
                    rate: text.to_owned(),
                    ..RuleText::default()
                })
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RuleText, A::Error> {
                let table = RuleTable::deserialize(MapAccessDeserializer::new(map))?;
                Ok(RuleText {
                    rate: table.rate,
                    burst: table.burst,
                    per: table.per,
                })
            }
        }

        deserializer.deserialize_any(Text)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// The `[limits]` of `text`, or toml's error in full.
    fn limits(text: &str) -> Result<Limits, String> {
        #[derive(Debug, Deserialize)]
        struct File {
            limits: Limits,
        }
        toml::from_str::<File>(text)
            .map(|file| file.limits)
            .map_err(|error| error.to_string())
    }

    #[test]
    fn the_table_reads_rates_bursts_and_scopes() {
        let read = limits(
            r#"
            [limits]
            per_org = "600/min"
            per_user = { rate = "60/min", burst = 10 }
            [limits.tools]
            roster_assign_shift = "10/min"
            roster_publish_week = { rate = "2/h", per = "org" }
            "#,
        )
        .expect("a valid table");
        assert_eq!(read.per_org.map(|rule| rule.calls().get()), Some(600));
        let per_user = read.per_user.expect("per_user");
        assert_eq!(per_user.burst().get(), 10);
        assert_eq!(per_user.period(), Duration::from_secs(60));
        let (assign, scope) = read.tools["roster_assign_shift"];
        assert_eq!((assign.calls().get(), scope), (10, Scope::User));
        let (publish, scope) = read.tools["roster_publish_week"];
        assert_eq!(
            (publish.period(), scope),
            (Duration::from_secs(3_600), Scope::Org)
        );
        assert!(!read.is_empty());
        assert!(limits("[limits]\n").expect("empty").is_empty());
    }

    #[test]
    fn a_typo_names_the_key_and_what_is_accepted() {
        for (text, says) in [
            (
                "[limits]\nper_user = \"60/mn\"",
                "`per_user` in [limits]: `60/mn` is not a rate: `mn` is not a period; write \
                 CALLS/PERIOD",
            ),
            ("[limits]\nper_usr = \"60/min\"", "unknown field `per_usr`"),
            (
                "[limits.tools]\nroster_assign_shift = { rate = \"1/s\", brust = 2 }",
                "unknown field `brust`, expected one of `rate`, `burst`, `per`",
            ),
            (
                "[limits.tools]\nroster_assign_shift = { rate = \"1/s\", per = \"team\" }",
                "`tools.roster_assign_shift` in [limits]: `per = \"team\"` is not a scope",
            ),
            (
                "[limits]\nper_org = { rate = \"1/s\", burst = 0 }",
                "`per_org` in [limits]: `burst = 0` admits no call",
            ),
            (
                "[limits]\nper_user = { rate = \"1/s\", per = \"org\" }",
                "`per` is for the limits of [limits.tools] only",
            ),
            (
                "[limits]\nper_org = 600",
                "expected a rate such as \"60/min\"",
            ),
        ] {
            let error = limits(text).expect_err(text);
            assert!(error.contains(says), "{text}:\n{error}");
        }
    }
}
