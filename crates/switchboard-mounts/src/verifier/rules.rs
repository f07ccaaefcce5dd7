//! The rule-based verifier, and its rules as data.
//!
//! The rules are a TOML file of `[[rule]]` tables (`rules/injection.toml`, embedded, documents
//! each key and why each default rule is shaped as it is). A mounts file may name another
//! such file under `[verifier] rules`; its rules are added to the defaults, a rule with a
//! default's id replaces it, and `enabled = false` turns one off. A rules file is checked as
//! strictly as the mounts file: a mistake is refused with the file, line, column and key.

use std::{
    collections::BTreeSet,
    ops::{Range, RangeInclusive},
    path::{Path, PathBuf},
    sync::LazyLock,
};

use regex::Regex;
use rmcp::model::Tool;
use serde::Deserialize;
use serde_json::Value;
use toml::Spanned;

use super::{Finding, OtherTool, Verifier, VerifyInput, escape_invisible};
use crate::{
    config::{ConfigError, invalid_at, parse_toml},
    tool::mounted_name,
};

/// The default rules, shipped with the crate.
const DEFAULT_RULES: &str = include_str!("../../rules/injection.toml");

/// The longest excerpt a finding shows, in characters.
const EXCERPT_CHARS: usize = 160;

/// How many characters around a match an excerpt shows, when the match is short.
const CONTEXT_CHARS: usize = 24;

/// The verifier's rules: the defaults, extended by at most one file.
#[derive(Debug, Clone, PartialEq)]
pub struct Rules {
    rules: Vec<Rule>,
    extension: Option<PathBuf>,
}

/// Which texts of a server a rule looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
enum FieldKind {
    Name,
    Title,
    Description,
    /// Every string and property name of the input and output schemas.
    Schema,
    Annotations,
    Instructions,
}

/// One rule, checked.
#[derive(Debug, Clone)]
struct Rule {
    id: String,
    message: String,
    /// The texts it looks at; `None`: all.
    fields: Option<BTreeSet<FieldKind>>,
    check: Check,
}

#[derive(Debug, Clone)]
enum Check {
    Pattern(Vec<Regex>),
    Unicode {
        ranges: Vec<RangeInclusive<u32>>,
        min_run: usize,
    },
    Length {
        max: usize,
    },
    Shadowing,
}

impl PartialEq for Rule {
    fn eq(&self, other: &Self) -> bool {
        let same_check = match (&self.check, &other.check) {
            (Check::Pattern(mine), Check::Pattern(theirs)) => mine
                .iter()
                .map(Regex::as_str)
                .eq(theirs.iter().map(Regex::as_str)),
            (mine, theirs) => format!("{mine:?}") == format!("{theirs:?}"),
        };
        self.id == other.id
            && self.message == other.message
            && self.fields == other.fields
            && same_check
    }
}

impl Rules {
    /// The rules shipped with the crate (`rules/injection.toml`), compiled once per process.
    pub fn defaults() -> Self {
        static DEFAULTS: LazyLock<Rules> = LazyLock::new(|| {
            let rules = parse(Path::new("rules/injection.toml"), DEFAULT_RULES)
                .map(|parsed| parsed.into_iter().filter_map(|(rule, _)| rule).collect())
                // The embedded file is checked by this crate's tests.
                .expect("the embedded default rules are valid");
            Rules {
                rules,
                extension: None,
            }
        });
        DEFAULTS.clone()
    }

    /// These rules extended by the rules file at `path`.
    pub fn extended_by_file(self, path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        self.extended(path, &text)
    }

    /// These rules extended by `text`, the contents of the rules file at `path`: a rule with
    /// the id of one of these replaces it, `enabled = false` removes it, others are added.
    pub fn extended(mut self, path: &Path, text: &str) -> Result<Self, ConfigError> {
        for (rule, id) in parse(path, text)? {
            self.rules.retain(|existing| existing.id != id);
            if let Some(rule) = rule {
                self.rules.push(rule);
            }
        }
        self.extension = Some(path.to_owned());
        Ok(self)
    }

    /// The ids of the rules, in order.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.rules.iter().map(|rule| rule.id.as_str())
    }

    /// The file these rules were extended by, if any.
    pub fn extension(&self) -> Option<&Path> {
        self.extension.as_deref()
    }
}

impl Default for Rules {
    fn default() -> Self {
        Self::defaults()
    }
}

/// A rule as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRules {
    #[serde(default)]
    rule: Vec<Spanned<RawRule>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    id: Spanned<String>,
    kind: Option<RawKind>,
    message: Option<String>,
    #[serde(default)]
    patterns: Vec<Spanned<String>>,
    #[serde(default)]
    ranges: Vec<Spanned<String>>,
    min_run: Option<Spanned<usize>>,
    max: Option<Spanned<usize>>,
    fields: Option<Vec<FieldKind>>,
    enabled: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum RawKind {
    Pattern,
    Unicode,
    Length,
    Shadowing,
}

/// The rules of `text` (the file at `path`), each with its id; `None` for a rule turned off.
fn parse(path: &Path, text: &str) -> Result<Vec<(Option<Rule>, String)>, ConfigError> {
    let invalid = |span: Range<usize>, key: Option<String>, message: String| {
        invalid_at(path, text, &span, key, message)
    };
    let file: RawRules = parse_toml(path, text)?;
    let mut seen = BTreeSet::new();
    let mut parsed = Vec::with_capacity(file.rule.len());
    for (index, raw) in file.rule.into_iter().enumerate() {
        let span = raw.span();
        let raw = raw.into_inner();
        let id = raw.id.get_ref().clone();
        let checked = if seen.insert(id.clone()) {
            rule_of(raw)
        } else {
            Err(RuleRefusal::at(
                raw.id.span(),
                "id",
                format!("the rule id `{id}` is used by an earlier rule in this file"),
            ))
        };
        let rule = checked.map_err(|refusal| {
            invalid(
                refusal.span.unwrap_or(span),
                Some(format!("rule[{index}].{}", refusal.key)),
                refusal.message,
            )
        })?;
        parsed.push((rule, id));
    }
    Ok(parsed)
}

/// Why one rule is refused: where (the whole rule when `span` is `None`), the key within the
/// rule, and what is expected.
struct RuleRefusal {
    span: Option<Range<usize>>,
    key: String,
    message: String,
}

impl RuleRefusal {
    fn at(span: Range<usize>, key: &str, message: String) -> Self {
        Self {
            span: Some(span),
            key: key.to_owned(),
            message,
        }
    }

    /// A refusal about a key the rule lacks, or has but should not.
    fn of_rule(key: &str, message: String) -> Self {
        Self {
            span: None,
            key: key.to_owned(),
            message,
        }
    }
}

/// `raw` checked; `None` when it turns a rule off.
fn rule_of(raw: RawRule) -> Result<Option<Rule>, RuleRefusal> {
    let id = raw.id.get_ref();
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Err(RuleRefusal::at(
            raw.id.span(),
            "id",
            format!("the rule id `{id}` is not valid: use letters, digits and `-`"),
        ));
    }
    if raw.enabled == Some(false) {
        return Ok(None);
    }
    let Some(kind) = raw.kind else {
        return Err(RuleRefusal::of_rule(
            "kind",
            format!(
                "rule `{id}` has no `kind`: give \"pattern\", \"unicode\", \"length\" or \
                 \"shadowing\" (or `enabled = false` to turn a default rule off)"
            ),
        ));
    };
    let Some(message) = raw
        .message
        .clone()
        .filter(|message| !message.trim().is_empty())
    else {
        return Err(RuleRefusal::of_rule(
            "message",
            format!("rule `{id}` has no `message`: say what a finding of it means"),
        ));
    };
    let check = check_of(id, kind, &raw)?;
    Ok(Some(Rule {
        id: id.clone(),
        message,
        fields: raw.fields.map(|fields| fields.into_iter().collect()),
        check,
    }))
}

/// What rule `id` of `kind` checks, from the keys of its kind in `raw`.
fn check_of(id: &str, kind: RawKind, raw: &RawRule) -> Result<Check, RuleRefusal> {
    let unexpected = [
        ("patterns", !raw.patterns.is_empty(), RawKind::Pattern),
        ("ranges", !raw.ranges.is_empty(), RawKind::Unicode),
        ("min_run", raw.min_run.is_some(), RawKind::Unicode),
        ("max", raw.max.is_some(), RawKind::Length),
    ]
    .into_iter()
    .find(|(_, given, owner)| *given && *owner != kind);
    if let Some((key, _, owner)) = unexpected {
        return Err(RuleRefusal::of_rule(
            key,
            format!("`{key}` is for a rule of kind {owner:?}, and rule `{id}` is {kind:?}"),
        ));
    }
    match kind {
        RawKind::Pattern => {
            if raw.patterns.is_empty() {
                return Err(RuleRefusal::of_rule(
                    "patterns",
                    format!("rule `{id}` is a pattern rule with no `patterns`"),
                ));
            }
            let compiled = raw.patterns.iter().enumerate().map(|(position, pattern)| {
                Regex::new(pattern.get_ref()).map_err(|error| {
                    RuleRefusal::at(
                        pattern.span(),
                        &format!("patterns[{position}]"),
                        format!("not a valid regular expression: {error}"),
                    )
                })
            });
            Ok(Check::Pattern(compiled.collect::<Result<_, _>>()?))
        }
        RawKind::Unicode => {
            if raw.ranges.is_empty() {
                return Err(RuleRefusal::of_rule(
                    "ranges",
                    format!("rule `{id}` is a unicode rule with no `ranges`"),
                ));
            }
            let ranges = raw.ranges.iter().enumerate().map(|(position, range)| {
                parse_range(range.get_ref()).map_err(|message| {
                    RuleRefusal::at(range.span(), &format!("ranges[{position}]"), message)
                })
            });
            let min_run = match &raw.min_run {
                Some(min_run) if *min_run.get_ref() == 0 => {
                    return Err(RuleRefusal::at(
                        min_run.span(),
                        "min_run",
                        "`min_run` is at least 1".to_owned(),
                    ));
                }
                Some(min_run) => *min_run.get_ref(),
                None => 1,
            };
            Ok(Check::Unicode {
                ranges: ranges.collect::<Result<_, _>>()?,
                min_run,
            })
        }
        RawKind::Length => match &raw.max {
            Some(max) => Ok(Check::Length {
                max: *max.get_ref(),
            }),
            None => Err(RuleRefusal::of_rule(
                "max",
                format!("rule `{id}` is a length rule with no `max` (in characters)"),
            )),
        },
        RawKind::Shadowing => Ok(Check::Shadowing),
    }
}

/// `E0000-E007F` or `FEFF`: code points in hexadecimal, with an optional `U+`.
fn parse_range(text: &str) -> Result<RangeInclusive<u32>, String> {
    let expected = || {
        format!(
            "`{text}` is not a range of code points: write `E0000-E007F` or `FEFF` (hexadecimal)"
        )
    };
    let point = |part: &str| {
        let part = part.trim();
        let digits = part
            .strip_prefix("U+")
            .or_else(|| part.strip_prefix("u+"))
            .unwrap_or(part);
        u32::from_str_radix(digits, 16)
            .ok()
            .filter(|point| *point <= 0x10_FFFF)
    };
    let (start, end) = match text.split_once('-') {
        Some((start, end)) => (point(start), point(end)),
        None => (point(text), point(text)),
    };
    match (start, end) {
        (Some(start), Some(end)) if start <= end => Ok(start..=end),
        _ => Err(expected()),
    }
}

/// The verifier whose checks are [`Rules`].
#[derive(Debug, Clone, Default)]
pub struct RuleVerifier {
    rules: Rules,
}

impl RuleVerifier {
    /// A verifier that checks by `rules`.
    pub fn new(rules: Rules) -> Self {
        Self { rules }
    }
}

/// One text the model reads, and where it is.
struct Text<'a> {
    tool: Option<&'a str>,
    field: String,
    kind: FieldKind,
    text: String,
}

impl Verifier for RuleVerifier {
    fn check(&self, input: &VerifyInput<'_>) -> Vec<Finding> {
        let own: BTreeSet<String> = input
            .tools
            .iter()
            .flat_map(|tool| {
                [
                    tool.name.to_string(),
                    mounted_name(input.server, &tool.name),
                ]
            })
            .collect();
        let others: Vec<&OtherTool> = input
            .others
            .iter()
            .filter(|other| is_compound(&other.name) && !own.contains(&other.name))
            .collect();
        let mut findings = Vec::new();
        for text in &texts(input) {
            for rule in &self.rules.rules {
                if rule.looks_at(text.kind) {
                    rule.find(text, &others, &mut findings);
                }
            }
        }
        findings
    }
}

impl Rule {
    fn looks_at(&self, kind: FieldKind) -> bool {
        self.fields
            .as_ref()
            .is_none_or(|fields| fields.contains(&kind))
    }

    /// Adds to `findings` what this rule finds in `text`: at most one finding, except for
    /// shadowing, which reports each tool mentioned.
    fn find(&self, text: &Text<'_>, others: &[&OtherTool], findings: &mut Vec<Finding>) {
        let found = |start: usize, end: usize, message: String| Finding {
            rule: self.id.clone(),
            tool: text.tool.map(str::to_owned),
            field: text.field.clone(),
            excerpt: excerpt(&text.text, start, end),
            message,
        };
        match &self.check {
            Check::Pattern(patterns) => {
                if let Some(at) = patterns.iter().find_map(|pattern| pattern.find(&text.text)) {
                    findings.push(found(at.start(), at.end(), self.message.clone()));
                }
            }
            Check::Unicode { ranges, min_run } => {
                if let Some((start, end)) = find_run(&text.text, ranges, *min_run) {
                    findings.push(found(start, end, self.message.clone()));
                }
            }
            Check::Length { max } => {
                let count = text.text.chars().count();
                if count > *max {
                    let shown = text
                        .text
                        .char_indices()
                        .nth(EXCERPT_CHARS / 2)
                        .map_or(text.text.len(), |(offset, _)| offset);
                    let message = format!("{} ({count} characters; at most {max})", self.message);
                    findings.push(found(0, shown, message));
                }
            }
            Check::Shadowing => {
                for other in others {
                    if let Some(start) = find_identifier(&text.text, &other.name) {
                        let message = format!(
                            "{}: `{}` is a tool of `{}`",
                            self.message, other.name, other.owner
                        );
                        findings.push(found(start, start + other.name.len(), message));
                    }
                }
            }
        }
    }
}

/// Every text of `input` the model reads, with where it is.
fn texts<'a>(input: &VerifyInput<'a>) -> Vec<Text<'a>> {
    let mut texts = Vec::new();
    for tool in input.tools {
        texts.extend(tool_texts(tool));
    }
    if let Some(instructions) = input.instructions {
        texts.push(Text {
            tool: None,
            field: "instructions".to_owned(),
            kind: FieldKind::Instructions,
            text: instructions.to_owned(),
        });
    }
    texts
}

/// The texts of one tool.
fn tool_texts(tool: &Tool) -> Vec<Text<'_>> {
    let name = Some(&*tool.name);
    let mut texts = vec![Text {
        tool: name,
        field: "name".to_owned(),
        kind: FieldKind::Name,
        text: tool.name.to_string(),
    }];
    let plain = [
        ("title", FieldKind::Title, tool.title.as_deref()),
        (
            "description",
            FieldKind::Description,
            tool.description.as_deref(),
        ),
    ];
    for (field, kind, text) in plain {
        if let Some(text) = text {
            texts.push(Text {
                tool: name,
                field: field.to_owned(),
                kind,
                text: text.to_owned(),
            });
        }
    }
    let mut walk = |path: &str, kind: FieldKind, value: Value| {
        walk_json(path, &value, &mut |field, text| {
            texts.push(Text {
                tool: name,
                field,
                kind,
                text: text.to_owned(),
            });
        });
    };
    walk(
        "inputSchema",
        FieldKind::Schema,
        Value::Object((*tool.input_schema).clone()),
    );
    if let Some(output) = &tool.output_schema {
        walk(
            "outputSchema",
            FieldKind::Schema,
            Value::Object((**output).clone()),
        );
    }
    if let Some(annotations) = &tool.annotations
        && let Ok(value) = serde_json::to_value(annotations)
    {
        walk("annotations", FieldKind::Annotations, value);
    }
    texts
}

/// Calls `visit` with the path and text of every string and object key under `value`.
fn walk_json(path: &str, value: &Value, visit: &mut dyn FnMut(String, &str)) {
    match value {
        Value::String(text) => visit(path.to_owned(), text),
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                walk_json(&format!("{path}[{index}]"), item, visit);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                let inner = format!("{path}.{key}");
                // A property name is read by the model as much as a description is.
                visit(inner.clone(), key);
                walk_json(&inner, item, visit);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// The byte span of the first run of at least `min_run` characters of `text` in `ranges`.
fn find_run(text: &str, ranges: &[RangeInclusive<u32>], min_run: usize) -> Option<(usize, usize)> {
    let mut run: Option<(usize, usize, usize)> = None;
    for (offset, character) in text.char_indices() {
        let point = u32::from(character);
        if ranges.iter().any(|range| range.contains(&point)) {
            let (start, _, length) = run.unwrap_or((offset, offset, 0));
            run = Some((start, offset + character.len_utf8(), length + 1));
        } else {
            match run.take() {
                Some((start, end, length)) if length >= min_run => return Some((start, end)),
                _ => {}
            }
        }
    }
    run.filter(|(_, _, length)| *length >= min_run)
        .map(|(start, end, _)| (start, end))
}

/// Where `name` occurs in `text` as a whole identifier (not inside a longer one).
fn find_identifier(text: &str, name: &str) -> Option<usize> {
    let is_part = |character: char| character.is_alphanumeric() || matches!(character, '_' | '-');
    text.match_indices(name)
        .map(|(start, _)| start)
        .find(|&start| {
            let before = text[..start].chars().next_back();
            let after = text[start + name.len()..].chars().next();
            !before.is_some_and(is_part) && !after.is_some_and(is_part)
        })
}

/// Whether `name` reads as an identifier rather than a word: it has `_`, `-` or `.`, or is
/// camelCase.
fn is_compound(name: &str) -> bool {
    name.contains(['_', '-', '.'])
        || name
            .as_bytes()
            .windows(2)
            .any(|pair| pair[0].is_ascii_lowercase() && pair[1].is_ascii_uppercase())
}

/// The text of `text` from byte `start` to `end` with a little context either side, at most
/// [`EXCERPT_CHARS`] characters, trimmed, invisible characters escaped; `…` marks a cut.
fn excerpt(text: &str, start: usize, end: usize) -> String {
    let from = text[..start]
        .char_indices()
        .rev()
        .nth(CONTEXT_CHARS - 1)
        .map_or(0, |(offset, _)| offset);
    let to = text[end..]
        .char_indices()
        .nth(CONTEXT_CHARS)
        .map_or(text.len(), |(offset, _)| end + offset);
    let shown: String = text[from..to].chars().take(EXCERPT_CHARS).collect();
    let mut excerpt = String::new();
    if from > 0 {
        excerpt.push('…');
    }
    excerpt.push_str(&escape_invisible(shown.trim()));
    if from + shown.len() < text.len() {
        excerpt.push('…');
    }
    excerpt
}
