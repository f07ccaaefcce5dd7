//! `#[derive(ToolInput)]`: the marker impl, plus the compile-time refusal of `org_id` fields.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Data, DeriveInput, Fields, LitStr, spanned::Spanned};

use crate::paths::core_path;

pub(crate) fn expand(item: TokenStream) -> syn::Result<TokenStream> {
    let input: DeriveInput = syn::parse2(item)?;
    let fields = match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(named) => named.named.iter().collect::<Vec<_>>(),
            Fields::Unit => Vec::new(),
            Fields::Unnamed(unnamed) => {
                return Err(syn::Error::new(
                    unnamed.span(),
                    "a tool input must have named fields: agents send a JSON object",
                ));
            }
        },
        _ => {
            return Err(syn::Error::new(
                input.ident.span(),
                "a tool input must be a struct with named fields: agents send a JSON object",
            ));
        }
    };
    for field in fields {
        if let Some(ident) = &field.ident
            && is_org_id(&ident.to_string())
        {
            return Err(org_id_error(ident.span()));
        }
        if let Some(renamed) = serde_rename(field)?
            && is_org_id(&renamed.value())
        {
            return Err(org_id_error(renamed.span()));
        }
    }
    let core = core_path();
    let name = &input.ident;
    let (impl_generics, type_generics, where_clause) = input.generics.split_for_impl();
    Ok(quote! {
        impl #impl_generics #core::ToolInput for #name #type_generics #where_clause {}
    })
}

fn org_id_error(span: proc_macro2::Span) -> syn::Error {
    syn::Error::new(
        span,
        "a tool input may not have an `org_id` field: the organisation always comes from the \
         call context (`ctx.caller().org_id`), never from params",
    )
}

/// Mirrors `switchboard_core::schema::is_org_id_key`.
fn is_org_id(name: &str) -> bool {
    let normalized: String = name
        .trim_start_matches("r#")
        .chars()
        .filter(|ch| *ch != '_' && *ch != '-')
        .flat_map(char::to_lowercase)
        .collect();
    normalized == "orgid"
}

fn serde_rename(field: &syn::Field) -> syn::Result<Option<LitStr>> {
    let mut renamed = None;
    for attr in field
        .attrs
        .iter()
        .filter(|attr| attr.path().is_ident("serde"))
    {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                if let Ok(value) = meta.value() {
                    renamed = Some(value.parse::<LitStr>()?);
                }
            } else if meta.input.peek(syn::Token![=]) {
                let _ = meta.value()?.parse::<syn::Expr>()?;
            } else if meta.input.peek(syn::token::Paren) {
                let _ = meta.input.parse::<proc_macro2::Group>()?;
            }
            Ok(())
        })?;
    }
    Ok(renamed)
}
