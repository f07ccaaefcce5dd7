//! `#[switchboard::derives(...)]`: the derives a tool's input and output need, through the copies
//! of `serde`, `schemars` and `validator` that Switchboard itself is built with.
//!
//! A crate that embeds Switchboard and derives `JsonSchema` with its own `schemars` gets a
//! second copy of the trait whenever its version differs from Switchboard's (schemars 0.8 beside
//! 1.x), and the tool does not compile. This attribute writes the `#[derive]` with Switchboard's
//! paths instead, and the `crate = "..."` attributes that make each derive's generated code use
//! them, so that such a crate needs no `serde`, `schemars` or `validator` dependency of its own.
//! Names it does not know (`Debug`, `PartialEq`) are derived as written.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Path, Token, punctuated::Punctuated};

use crate::paths::core_path;

/// The derives this attribute routes through `switchboard_core::__private`.
enum Known {
    Serialize,
    Deserialize,
    JsonSchema,
    Validate,
    ToolInput,
}

impl Known {
    fn of(path: &Path) -> Option<Self> {
        let ident = path.get_ident()?;
        Some(match ident.to_string().as_str() {
            "Serialize" => Self::Serialize,
            "Deserialize" => Self::Deserialize,
            "JsonSchema" => Self::JsonSchema,
            "Validate" => Self::Validate,
            "ToolInput" => Self::ToolInput,
            _ => return None,
        })
    }
}

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let derives =
        syn::parse::Parser::parse2(Punctuated::<Path, Token![,]>::parse_terminated, attr)?;
    if derives.is_empty() {
        return Err(syn::Error::new(
            proc_macro2::Span::call_site(),
            "name the derives: `#[switchboard::derives(Serialize, Deserialize, JsonSchema, \
             Validate, ToolInput)]` for a tool input, `#[switchboard::derives(Clone, \
             Serialize, JsonSchema)]` for a tool output",
        ));
    }
    let core = core_path();
    // The `crate = "..."` attributes take the path as a string.
    let private = format!("{core}::__private").replace(' ', "");
    let (mut serde, mut schemars, mut validator) = (false, false, false);
    let mut paths = Vec::with_capacity(derives.len());
    for path in derives {
        paths.push(match Known::of(&path) {
            Some(Known::Serialize) => {
                serde = true;
                quote!(#core::__private::serde::Serialize)
            }
            Some(Known::Deserialize) => {
                serde = true;
                quote!(#core::__private::serde::Deserialize)
            }
            Some(Known::JsonSchema) => {
                schemars = true;
                quote!(#core::__private::schemars::JsonSchema)
            }
            Some(Known::Validate) => {
                validator = true;
                quote!(#core::__private::validator::Validate)
            }
            Some(Known::ToolInput) => quote!(#core::ToolInput),
            None => quote!(#path),
        });
    }
    // Helper attributes come after the `#[derive]` that declares them.
    let serde = serde.then(|| {
        let path = format!("{private}::serde");
        quote!(#[serde(crate = #path)])
    });
    let schemars = schemars.then(|| {
        let path = format!("{private}::schemars");
        quote!(#[schemars(crate = #path)])
    });
    let validator = validator.then(|| {
        let path = format!("{private}::validator");
        quote!(#[validate(crate = #path)])
    });
    Ok(quote! {
        #[derive(#(#paths),*)]
        #serde
        #schemars
        #validator
        #item
    })
}
