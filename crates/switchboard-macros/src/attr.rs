//! Parsing and checking the `#[tool(...)]` arguments. Every error points at the key or value
//! that is wrong and says what would be right.

use proc_macro2::{Span, TokenStream};
use syn::{
    Expr, ExprArray, ExprLit, ExprPath, Ident, Lit, LitInt, LitStr, Meta, Path, Token,
    parse::Parser, punctuated::Punctuated, spanned::Spanned,
};

const KEYS: &str =
    "domain, category, permission, name, title, intents, tags, timeout_ms, tasks, asks_before_task";
const CATEGORIES: [&str; 4] = ["read", "propose", "execute", "restricted"];
const TASK_SUPPORT: [&str; 3] = ["forbidden", "optional", "required"];

/// The checked arguments of one `#[tool]`.
pub(crate) struct ToolArgs {
    pub(crate) name: Option<LitStr>,
    pub(crate) title: Option<LitStr>,
    pub(crate) domain: Path,
    pub(crate) category: Ident,
    pub(crate) permission: LitStr,
    pub(crate) intents: Vec<LitStr>,
    pub(crate) tags: Vec<LitStr>,
    pub(crate) timeout_ms: Option<LitInt>,
    pub(crate) tasks: Option<Ident>,
    /// The `asks_before_task` flag, where given.
    pub(crate) asks_before_task: Option<Ident>,
}

/// The keys given without a value.
const FLAGS: [&str; 1] = ["asks_before_task"];

pub(crate) fn parse(attr: TokenStream) -> syn::Result<ToolArgs> {
    let metas = Punctuated::<Meta, Token![,]>::parse_terminated.parse2(attr)?;
    let mut pairs = Vec::new();
    let mut asks_before_task = None;
    for meta in metas {
        match meta {
            Meta::NameValue(pair) => {
                if let Some(flag) = pair.path.get_ident().filter(|key| is_flag(key)) {
                    return Err(syn::Error::new_spanned(
                        &pair,
                        format!("`{flag}` is a flag and takes no value: write `{flag}`"),
                    ));
                }
                pairs.push(pair);
            }
            Meta::Path(path) => match path.get_ident() {
                Some(flag) if is_flag(flag) => set(&mut asks_before_task, flag.clone(), || {
                    syn::Error::new(flag.span(), format!("`{flag}` is given twice"))
                })?,
                _ => {
                    return Err(syn::Error::new_spanned(
                        &path,
                        format!(
                            "`{}` needs a value (`key = value`); only {} stands alone",
                            quote::ToTokens::to_token_stream(&path),
                            FLAGS.map(|flag| format!("`{flag}`")).join(", ")
                        ),
                    ));
                }
            },
            Meta::List(list) => {
                return Err(syn::Error::new_spanned(
                    &list,
                    format!("`#[tool]` takes `key = value` pairs; expected one of {KEYS}"),
                ));
            }
        }
    }
    let mut name = None;
    let mut title = None;
    let mut domain = None;
    let mut category = None;
    let mut permission = None;
    let mut intents = None;
    let mut tags = None;
    let mut timeout_ms = None;
    let mut tasks = None;
    for pair in &pairs {
        let Some(key) = pair.path.get_ident() else {
            return Err(syn::Error::new_spanned(
                &pair.path,
                format!("unknown key; expected one of {KEYS}"),
            ));
        };
        let key_name = key.to_string();
        let duplicate = || syn::Error::new(key.span(), format!("`{key_name}` is given twice"));
        match key_name.as_str() {
            "name" => set(&mut name, string(&pair.value, "name")?, duplicate)?,
            "title" => set(&mut title, string(&pair.value, "title")?, duplicate)?,
            "domain" => set(&mut domain, domain_type(&pair.value)?, duplicate)?,
            "permission" => set(
                &mut permission,
                string(&pair.value, "permission")?,
                duplicate,
            )?,
            "category" => set(&mut category, category_ident(&pair.value)?, duplicate)?,
            "intents" => set(&mut intents, intent_list(&pair.value)?, duplicate)?,
            "tags" => set(&mut tags, tag_list(&pair.value)?, duplicate)?,
            "timeout_ms" => set(&mut timeout_ms, timeout(&pair.value)?, duplicate)?,
            "tasks" => set(&mut tasks, task_support(&pair.value)?, duplicate)?,
            _ => {
                let hint = closest(&key_name, KEYS.split(", "))
                    .map(|key| format!(" (did you mean `{key}`?)"))
                    .unwrap_or_default();
                return Err(syn::Error::new(
                    key.span(),
                    format!("unknown key `{key_name}`{hint}; expected one of {KEYS}"),
                ));
            }
        }
    }
    let missing = |key: &str, example: &str| {
        syn::Error::new(
            Span::call_site(),
            format!("#[tool] needs `{key}`, e.g. `#[tool({key} = {example}, ...)]`"),
        )
    };
    let domain = domain.ok_or_else(|| missing("domain", "Roster"))?;
    let category = category.ok_or_else(|| missing("category", "read"))?;
    let permission = permission.ok_or_else(|| missing("permission", "\"core.users.read\""))?;
    check_permission(&permission)?;
    if let Some(name) = &name {
        check_tool_name(&name.value(), name.span())?;
    }
    if let Some(flag) = &asks_before_task
        && tasks.as_ref().is_none_or(|tasks| *tasks == "forbidden")
    {
        return Err(syn::Error::new(
            flag.span(),
            "`asks_before_task` needs `tasks = optional` or `tasks = required`: only a call \
             that runs as a task has a task to begin at `ctx.begin_task()`",
        ));
    }
    Ok(ToolArgs {
        name,
        title,
        domain,
        category,
        permission,
        intents: intents.unwrap_or_default(),
        tags: tags.unwrap_or_default(),
        timeout_ms,
        tasks,
        asks_before_task,
    })
}

fn is_flag(key: &Ident) -> bool {
    FLAGS.iter().any(|flag| key == flag)
}

fn set<T>(
    slot: &mut Option<T>,
    value: T,
    duplicate: impl FnOnce() -> syn::Error,
) -> syn::Result<()> {
    if slot.is_some() {
        return Err(duplicate());
    }
    *slot = Some(value);
    Ok(())
}

fn string(value: &Expr, key: &str) -> syn::Result<LitStr> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Ok(lit.clone()),
        other => Err(syn::Error::new(
            other.span(),
            format!("`{key}` takes a string literal"),
        )),
    }
}

/// The domain is a type declared with `domain!`; whether it is one, rustc checks.
fn domain_type(value: &Expr) -> syn::Result<Path> {
    match value {
        Expr::Path(ExprPath {
            path, qself: None, ..
        }) => Ok(path.clone()),
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Err(syn::Error::new(
            lit.span(),
            format!(
                "`domain` takes the domain's type, declared with `domain!`, not its name: `domain = {}`",
                heck::ToUpperCamelCase::to_upper_camel_case(lit.value().as_str())
            ),
        )),
        other => Err(syn::Error::new_spanned(
            other,
            "`domain` takes the domain's type, declared with `domain!`: `domain = Roster`",
        )),
    }
}

fn category_ident(value: &Expr) -> syn::Result<Ident> {
    let expected = CATEGORIES.join(", ");
    let ident = match value {
        Expr::Path(path) => path.path.get_ident().cloned(),
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => syn::parse_str::<Ident>(&lit.value())
            .ok()
            .map(|ident| Ident::new(&ident.to_string(), lit.span())),
        _ => None,
    }
    .ok_or_else(|| {
        syn::Error::new_spanned(value, format!("`category` must be one of {expected}"))
    })?;
    let category = ident.to_string();
    if CATEGORIES.contains(&category.as_str()) {
        Ok(ident)
    } else {
        Err(syn::Error::new(
            ident.span(),
            format!("unknown category `{category}`; expected one of {expected}"),
        ))
    }
}

fn task_support(value: &Expr) -> syn::Result<Ident> {
    let expected = TASK_SUPPORT.join(", ");
    let ident = match value {
        Expr::Path(path) => path.path.get_ident().cloned(),
        _ => None,
    }
    .ok_or_else(|| syn::Error::new_spanned(value, format!("`tasks` must be one of {expected}")))?;
    if TASK_SUPPORT.contains(&ident.to_string().as_str()) {
        Ok(ident)
    } else {
        Err(syn::Error::new(
            ident.span(),
            format!("unknown task support `{ident}`; expected one of {expected}"),
        ))
    }
}

fn intent_list(value: &Expr) -> syn::Result<Vec<LitStr>> {
    let Expr::Array(ExprArray { elems, .. }) = value else {
        return Err(syn::Error::new(
            value.span(),
            "`intents` takes an array of strings, e.g. `intents = [\"who am i\", \"me\"]`",
        ));
    };
    elems
        .iter()
        .map(|elem| {
            let intent = string(elem, "each intent")?;
            check_intent(&intent)?;
            Ok(intent)
        })
        .collect()
}

/// Tags are short lowercase words, each given once: the rule of
/// `switchboard_core::is_valid_tag`, which this crate cannot name.
fn tag_list(value: &Expr) -> syn::Result<Vec<LitStr>> {
    let Expr::Array(ExprArray { elems, .. }) = value else {
        return Err(syn::Error::new(
            value.span(),
            "`tags` takes an array of strings, e.g. `tags = [\"billing\", \"beta\"]`",
        ));
    };
    let mut tags: Vec<LitStr> = Vec::with_capacity(elems.len());
    for elem in elems {
        let tag = string(elem, "each tag")?;
        let value = tag.value();
        let valid = (1..=64).contains(&value.len())
            && value
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-'));
        if !valid {
            return Err(syn::Error::new(
                tag.span(),
                format!(
                    "invalid tag `{value}`: use 1 to 64 characters from a-z 0-9 _ -, like `beta`"
                ),
            ));
        }
        if tags.iter().any(|earlier| earlier.value() == value) {
            return Err(syn::Error::new(
                tag.span(),
                format!("the tag `{value}` is given twice"),
            ));
        }
        tags.push(tag);
    }
    Ok(tags)
}

fn timeout(value: &Expr) -> syn::Result<LitInt> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Int(lit), ..
        }) => {
            let millis: u64 = lit.base10_parse()?;
            if millis == 0 {
                return Err(syn::Error::new(
                    lit.span(),
                    "`timeout_ms` must be at least 1",
                ));
            }
            Ok(lit.clone())
        }
        other => Err(syn::Error::new(
            other.span(),
            "`timeout_ms` takes an integer number of milliseconds",
        )),
    }
}

/// Tool names must be accepted by both the Anthropic tool API and MCP.
pub(crate) fn check_tool_name(name: &str, span: Span) -> syn::Result<()> {
    let rule = "use 1 to 64 characters from [a-zA-Z0-9_-], conventionally `<domain>_<action>`";
    let why = if name.is_empty() {
        "it is empty".to_owned()
    } else if let Some(bad) = name
        .chars()
        .find(|ch| !(ch.is_ascii_alphanumeric() || *ch == '_' || *ch == '-'))
    {
        format!("{bad:?} is not allowed")
    } else if name.len() > 64 {
        format!("it is {} characters long", name.len())
    } else {
        return Ok(());
    };
    Err(syn::Error::new(
        span,
        format!("invalid tool name `{name}`: {why}; {rule}"),
    ))
}

/// The candidate within edit distance 2 of `word`, if any: a typo's likely intent.
fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|candidate| (edit_distance(word, candidate), candidate))
        .filter(|(distance, _)| *distance <= 2)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// Levenshtein distance, counting an adjacent transposition (`categroy`) as one edit.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // rows[i][j]: distance between the first i chars of a and the first j chars of b.
    let mut rows = vec![vec![0; b.len() + 1]; a.len() + 1];
    rows[0] = (0..=b.len()).collect();
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let substitution = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + substitution);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

fn check_permission(permission: &LitStr) -> syn::Result<()> {
    let value = permission.value();
    let valid = !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if valid {
        Ok(())
    } else {
        Err(syn::Error::new(
            permission.span(),
            format!("invalid permission `{value}`: use dotted names like `roster.shifts.read`"),
        ))
    }
}

/// An intent is words and `{placeholder}`s naming input fields.
fn check_intent(intent: &LitStr) -> syn::Result<()> {
    let value = intent.value();
    let error =
        |why: &str| syn::Error::new(intent.span(), format!("invalid intent `{value}`: {why}"));
    if value.trim().is_empty() {
        return Err(error("it is empty"));
    }
    let mut rest = value.as_str();
    while let Some(open) = rest.find(['{', '}']) {
        if rest.as_bytes()[open] == b'}' {
            return Err(error("`}` without a matching `{`"));
        }
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            return Err(error("`{` without a matching `}`"));
        };
        // `{name}`, `{name:kind}`, `{first..last}` and `{first..last=this week}`; the
        // orchestrator checks the rest (kinds, defaults, optional parts) when it boots.
        let placeholder = &after[..close];
        let names = placeholder.split(['=', ':']).next().unwrap_or_default();
        let valid = names.split("..").all(|name| {
            !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        });
        if !valid {
            return Err(error(
                "placeholders look like `{field_name}`, `{field_name:date}` or `{from..to}`",
            ));
        }
        rest = &after[close + 1..];
    }
    Ok(())
}
