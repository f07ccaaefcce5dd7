//! `#[tool]`: checks the function's shape, then emits the marker type, its `Tool` impl and the
//! link-time registration. The function itself is kept as written, so it stays callable
//! directly (the baseline the benchmarks compare against).

use heck::ToUpperCamelCase;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::{Expr, ExprLit, FnArg, ItemFn, Lit, Meta, Pat, ReturnType, Type, spanned::Spanned};

use crate::{
    attr::{self, ToolArgs},
    paths::core_path,
};

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let function: ItemFn = syn::parse2(item)?;
    let args = attr::parse(attr)?;
    let description = description(&function)?;
    let (input_ty, output_ty) = signature(&function)?;

    let core = core_path();
    let fn_ident = &function.sig.ident;
    let vis = &function.vis;
    let fn_name = fn_ident.to_string();
    let marker = format_ident!("{}", fn_name.trim_start_matches("r#").to_upper_camel_case());
    let ToolArgs {
        name,
        title,
        domain,
        category,
        permission,
        intents,
        timeout_ms,
    } = args;
    let name = match name {
        Some(name) => name.value(),
        None => {
            let name = format!("{}_{}", domain.value(), fn_name.trim_start_matches("r#"));
            attr::check_tool_name(&name, fn_ident.span())?;
            name
        }
    };
    let category_variant = format_ident!(
        "{}",
        category.to_string().to_upper_camel_case(),
        span = category.span()
    );
    let title = match title {
        Some(title) => quote!(::core::option::Option::Some(#title)),
        None => quote!(::core::option::Option::None),
    };
    let timeout = match timeout_ms {
        Some(millis) => {
            quote!(::core::option::Option::Some(#core::__private::Duration::from_millis(#millis)))
        }
        None => quote!(::core::option::Option::None),
    };
    let marker_doc = format!(
        "The `{name}` tool, for typed calls: `registry.call::<{marker}>(input, &ctx)`.\n\n{description}"
    );
    let input_check = quote_spanned! {input_ty.span()=>
        const _: () = #core::__private::assert_tool_input::<#input_ty>();
    };
    let output_check = quote_spanned! {output_ty.span()=>
        const _: () = #core::__private::assert_tool_result::<#output_ty>();
    };

    Ok(quote! {
        #function

        #[doc = #marker_doc]
        #[derive(Debug, Clone, Copy, Default)]
        #vis struct #marker;

        #input_check
        #output_check

        impl #core::Tool for #marker {
            type Input = #input_ty;
            type Output = <#output_ty as #core::IntoToolResult>::Output;
            const SPEC: #core::ToolSpec = #core::ToolSpec {
                name: #name,
                title: #title,
                domain: #domain,
                category: #core::Category::#category_variant,
                permission: #permission,
                description: #description,
                intents: &[#(#intents),*],
                timeout: #timeout,
                location: #core::SourceLocation { file: ::core::file!(), line: ::core::line!() },
            };

            fn call(
                ctx: &#core::ToolContext,
                input: Self::Input,
            ) -> impl ::core::future::Future<
                Output = ::core::result::Result<Self::Output, #core::ToolError>,
            > + ::core::marker::Send {
                async move { #core::IntoToolResult::into_tool_result(#fn_ident(ctx, input).await) }
            }
        }

        #core::__private::inventory::submit! { #core::ToolEntry::of::<#marker>() }
    })
}

/// The doc comment, joined into one description.
fn description(function: &ItemFn) -> syn::Result<String> {
    let lines: Vec<String> = function
        .attrs
        .iter()
        .filter(|attr| attr.path().is_ident("doc"))
        .filter_map(|attr| match &attr.meta {
            Meta::NameValue(pair) => match &pair.value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(text),
                    ..
                }) => Some(text.value()),
                _ => None,
            },
            _ => None,
        })
        .map(|line| {
            line.strip_prefix(' ')
                .unwrap_or(&line)
                .trim_end()
                .to_owned()
        })
        .collect();
    let text = lines.join("\n").trim().to_owned();
    if text.is_empty() {
        return Err(syn::Error::new(
            function.sig.ident.span(),
            "a tool needs a doc comment: it becomes the description agents read to choose the tool",
        ));
    }
    Ok(text)
}

/// Checks `async fn name(ctx: &ToolContext, input: Input) -> Result<Output, E>` and returns
/// the input and return types.
fn signature(function: &ItemFn) -> syn::Result<(Type, Type)> {
    let sig = &function.sig;
    if sig.asyncness.is_none() {
        return Err(syn::Error::new(
            sig.fn_token.span,
            "a tool must be an `async fn`",
        ));
    }
    if !sig.generics.params.is_empty() {
        return Err(syn::Error::new(
            sig.generics.span(),
            "a tool function cannot be generic",
        ));
    }
    if let Some(variadic) = &sig.variadic {
        return Err(syn::Error::new(
            variadic.span(),
            "a tool function cannot be variadic",
        ));
    }
    let shape = "a tool takes two arguments: `(ctx: &ToolContext, input: YourInput)`";
    let mut inputs = sig.inputs.iter();
    let context = inputs
        .next()
        .ok_or_else(|| syn::Error::new(sig.paren_token.span.join(), shape))?;
    check_context(context)?;
    let input = inputs
        .next()
        .ok_or_else(|| syn::Error::new(sig.paren_token.span.join(), shape))?;
    let input_ty = input_type(input)?;
    if let Some(extra) = inputs.next() {
        return Err(syn::Error::new(
            extra.span(),
            format!("unexpected argument: {shape}"),
        ));
    }
    let output_ty = match &sig.output {
        ReturnType::Type(_, ty) => (**ty).clone(),
        ReturnType::Default => {
            return Err(syn::Error::new(
                sig.paren_token.span.close(),
                "a tool must return `Result<Output, E>` where `E: Into<ToolError>`",
            ));
        }
    };
    Ok((input_ty, output_ty))
}

fn check_context(arg: &FnArg) -> syn::Result<()> {
    let error = |span: Span| {
        syn::Error::new(
            span,
            "the first argument must be the call context: `ctx: &ToolContext`",
        )
    };
    let FnArg::Typed(typed) = arg else {
        return Err(syn::Error::new(
            arg.span(),
            "a tool is a free function, not a method: remove `self`",
        ));
    };
    let Type::Reference(reference) = &*typed.ty else {
        return Err(error(typed.ty.span()));
    };
    if let Some(mutability) = reference.mutability {
        return Err(syn::Error::new(
            mutability.span,
            "the context is shared: take `&ToolContext`, not `&mut`",
        ));
    }
    let is_context = matches!(
        &*reference.elem,
        Type::Path(path) if path.qself.is_none()
            && path.path.segments.last().is_some_and(|segment| segment.ident == "ToolContext")
    );
    if is_context {
        Ok(())
    } else {
        Err(error(reference.elem.span()))
    }
}

fn input_type(arg: &FnArg) -> syn::Result<Type> {
    let FnArg::Typed(typed) = arg else {
        return Err(syn::Error::new(
            arg.span(),
            "a tool is a free function, not a method",
        ));
    };
    if let Pat::Ident(ident) = &*typed.pat
        && ident.by_ref.is_some()
    {
        return Err(syn::Error::new(ident.span(), "take the input by value"));
    }
    if let Type::Reference(reference) = &*typed.ty {
        return Err(syn::Error::new(
            reference.span(),
            "the second argument is the input, taken by value: `input: YourInput`",
        ));
    }
    Ok((*typed.ty).clone())
}
