//! One rate limit as the config file writes it (`60/min`, a burst, and whom it counts), and
//! the GCRA quota it becomes.
//!
//! `CALLS/PERIOD` means: calls are let through at most one every `PERIOD / CALLS` on average,
//! and up to `burst` at once after a quiet spell (the burst is `CALLS` unless set). In any
//! stretch of time `w`, a key gets at most `burst + floor(w / (PERIOD / CALLS))` calls
//! through: that is the guarantee of the generic cell rate algorithm (GCRA) that `governor`
//! implements, and what the property test checks.

use std::{fmt, num::NonZeroU32, str::FromStr, time::Duration};

use governor::Quota;

/// The periods a rate may name, with the words that name them.
const UNITS: [(&[&str], u64); 4] = [
    (&["s", "sec", "second", "seconds"], 1),
    (&["min", "minute", "minutes"], 60),
    (&["h", "hour", "hours"], 3_600),
    (&["d", "day", "days"], 86_400),
];

/// What a rate looks like, for the messages that refuse one.
pub const RATE_FORMAT: &str = "CALLS/PERIOD, such as `60/min`, `10/s` or `1000/15min`, where \
                               PERIOD is `s`, `min`, `h` or `d`, optionally after a count";

/// Whom a rule counts calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Every call of an organisation, together.
    Org,
    /// Every call of one user of one organisation (the same user id in another organisation
    /// is another user).
    User,
}

impl Scope {
    /// As the config file and the rule's text name it: `org` or `user`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Org => "org",
            Scope::User => "user",
        }
    }
}

impl FromStr for Scope {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "org" => Ok(Scope::Org),
            "user" => Ok(Scope::User),
            other => Err(format!(
                "`per = \"{other}\"` is not a scope: use `org` (the organisation's calls \
                 together) or `user` (each user's own)"
            )),
        }
    }
}

/// A rate and a burst: `calls` per `period`, up to `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    calls: NonZeroU32,
    period: Duration,
    burst: NonZeroU32,
}

impl Rule {
    /// `calls` per `period`, with a burst of `calls`; `None` if one call every
    /// `period / calls` is shorter than a nanosecond or the period is not whole seconds.
    pub fn new(calls: NonZeroU32, period: Duration) -> Option<Self> {
        let rule = Self {
            calls,
            period,
            burst: calls,
        };
        (period.subsec_nanos() == 0 && !rule.interval().is_zero()).then_some(rule)
    }

    /// The same rate with up to `burst` calls at once.
    pub fn with_burst(self, burst: NonZeroU32) -> Self {
        Self { burst, ..self }
    }

    /// The calls per period.
    pub fn calls(&self) -> NonZeroU32 {
        self.calls
    }

    /// The period.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// How many calls may go through at once.
    pub fn burst(&self) -> NonZeroU32 {
        self.burst
    }

    /// The average time between two calls: `period / calls` (rounded down to the nanosecond).
    pub fn interval(&self) -> Duration {
        self.period / self.calls.get()
    }

    /// The GCRA quota of this rule.
    pub(crate) fn quota(&self) -> Quota {
        // `new` refused a zero interval, which is the only case `with_period` refuses.
        Quota::with_period(self.interval())
            .unwrap_or_else(|| Quota::per_second(NonZeroU32::MIN))
            .allow_burst(self.burst)
    }

    /// The rule in words, as a refusal names it: `60 calls per 60 s per user`.
    pub fn describe(&self, scope: Scope, tool: Option<&str>) -> String {
        let calls = self.calls;
        let seconds = self.period.as_secs();
        let tool = tool.map(|tool| format!(" of {tool}")).unwrap_or_default();
        let scope = scope.as_str();
        let mut text = format!("{calls} calls{tool} per {seconds} s per {scope}");
        if self.burst != self.calls {
            text.push_str(&format!(", bursts of up to {}", self.burst));
        }
        text
    }
}

/// `CALLS/PERIOD` ([`RATE_FORMAT`]), with a burst of `CALLS`.
impl FromStr for Rule {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let Some((calls, period)) = text.split_once('/') else {
            return Err(format!("`{text}` is not a rate: write {RATE_FORMAT}"));
        };
        let calls: u32 = calls.trim().parse().map_err(|_| {
            format!(
                "`{text}` is not a rate: `{}` is not a whole number of calls; write \
                 {RATE_FORMAT}",
                calls.trim()
            )
        })?;
        let calls = NonZeroU32::new(calls)
            .ok_or_else(|| format!("`{text}` admits no call: the count must be 1 or more"))?;
        let period = period.trim();
        let digits = period
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(period.len());
        let (count, unit) = period.split_at(digits);
        let count: u64 = match count {
            "" => 1,
            count => count
                .parse()
                .ok()
                .filter(|count| *count > 0)
                .ok_or_else(|| {
                    format!("`{text}` is not a rate: the period's count must be 1 or more")
                })?,
        };
        let unit = unit.trim();
        let seconds = UNITS
            .iter()
            .find(|(names, _)| names.contains(&unit))
            .map(|(_, seconds)| *seconds)
            .ok_or_else(|| {
                format!("`{text}` is not a rate: `{unit}` is not a period; write {RATE_FORMAT}")
            })?;
        let period = count
            .checked_mul(seconds)
            .map(Duration::from_secs)
            .ok_or_else(|| format!("`{text}` is not a rate: the period is too long"))?;
        Rule::new(calls, period)
            .ok_or_else(|| format!("`{text}` is too fast: at most 1,000,000,000 calls per second"))
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}s", self.calls, self.period.as_secs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(text: &str) -> Rule {
        text.parse()
            .unwrap_or_else(|error| panic!("{text}: {error}"))
    }

    #[test]
    fn rates_read_as_calls_per_period() {
        let sixty = rule("60/min");
        assert_eq!(sixty.calls().get(), 60);
        assert_eq!(sixty.period(), Duration::from_secs(60));
        assert_eq!(sixty.burst().get(), 60);
        assert_eq!(sixty.interval(), Duration::from_secs(1));
        assert_eq!(rule(" 10 / s ").period(), Duration::from_secs(1));
        assert_eq!(rule("1000/15min").period(), Duration::from_secs(900));
        assert_eq!(rule("5/2 hours").period(), Duration::from_secs(7_200));
        assert_eq!(rule("1/day").period(), Duration::from_secs(86_400));
        let quota = rule("600/h")
            .with_burst(NonZeroU32::new(5).expect("5"))
            .quota();
        assert_eq!(quota.replenish_interval(), Duration::from_secs(6));
        assert_eq!(quota.burst_size().get(), 5);
    }

    #[test]
    fn a_malformed_rate_says_what_is_accepted() {
        for (text, says) in [
            ("60", "is not a rate: write CALLS/PERIOD"),
            ("60/mn", "`mn` is not a period"),
            ("sixty/min", "`sixty` is not a whole number"),
            ("0/min", "admits no call"),
            ("-1/min", "is not a whole number"),
            ("10/0min", "the period's count must be 1 or more"),
            ("4000000000/s", "too fast"),
        ] {
            let error = text.parse::<Rule>().expect_err(text);
            assert!(error.contains(says), "{text}: {error}");
        }
    }

    #[test]
    fn a_rule_describes_itself_as_configured() {
        assert_eq!(
            rule("60/min").describe(Scope::User, None),
            "60 calls per 60 s per user"
        );
        assert_eq!(
            rule("10/min")
                .with_burst(NonZeroU32::new(2).expect("2"))
                .describe(Scope::Org, Some("roster_assign_shift")),
            "10 calls of roster_assign_shift per 60 s per org, bursts of up to 2"
        );
        assert_eq!(rule("1000/15min").to_string(), "1000/900s");
    }

    #[test]
    fn scopes_are_org_or_user() {
        assert_eq!("org".parse(), Ok(Scope::Org));
        assert_eq!("user".parse(), Ok(Scope::User));
        let error = "tool".parse::<Scope>().expect_err("not a scope");
        assert!(error.contains("use `org`"), "{error}");
    }
}
