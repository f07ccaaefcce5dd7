//! `#[tool]`: checks the function's shape, then emits the marker type, its `Tool` impl and the
//! link-time registration. The function itself is kept as written, so it stays callable
//! directly (the baseline the benchmarks compare against).

use heck::ToUpperCamelCase;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::{Expr, ExprLit, FnArg, ItemFn, Lit, Meta, Pat, ReturnType, Type, spanned::Spanned};

use crate::{
    attr::{self, ToolArgs},
    doc_text::unwrap_paragraphs,
    paths::core_path,
};

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let function: ItemFn = syn::parse2(item)?;
    let args = attr::parse(attr)?;
    let description = description(&function)?;
    let (context_ty, input_ty, output_ty) = signature(&function)?;

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
        tags,
        timeout_ms,
        tasks,
        asks_before_task,
    } = args;
    let asks_before_task = asks_before_task.is_some();
    let name = match name {
        Some(name) => quote!(#name),
        None => {
            // `<domain>_<function>`, joined at compile time: only the domain type knows its
            // name. The function's part is checked here, the domain's by `domain!`, and the
            // length by the constant's evaluation.
            let function = fn_name.trim_start_matches("r#");
            attr::check_tool_name(function, fn_ident.span())?;
            quote! {{
                const DOMAIN: &str = <#domain as #core::Domain>::NAME;
                const LEN: usize = DOMAIN.len() + 1 + #function.len();
                const NAME: [u8; LEN] = #core::__private::tool_name::<LEN>(DOMAIN, #function);
                #core::__private::tool_name_str(&NAME)
            }}
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
    let tasks = match tasks {
        Some(tasks) => {
            let variant = format_ident!(
                "{}",
                tasks.to_string().to_upper_camel_case(),
                span = tasks.span()
            );
            quote!(#core::TaskSupport::#variant)
        }
        None => quote!(#core::TaskSupport::Forbidden),
    };
    let marker_doc = format!(
        "The `{fn_name}` tool, for typed calls: `registry.call::<{marker}>(input, &ctx)`.\n\n{description}"
    );
    // The context handed to the function carries the span of the context type the function
    // declares, so a tool that expects another domain's state is reported there.
    let context_arg = quote_spanned!(context_ty.span()=> ctx);
    // The items of the generated impl that handle the user's return type carry its span, every
    // token of them (rustc reports some errors at an item's whole span, attributes included),
    // so a wrong return type, or a future that is not `Send`, is reported at that type and not
    // at the whole attribute. `type Input` needs no help: rustc reports its bound at the input
    // type's own tokens.
    let output_assoc = quote_spanned! {output_ty.span()=>
        type Output = <#output_ty as #core::__private::ToolReturn>::Output;
    };
    // The output's decoder from JSON, `None` when it has no `Deserialize`: picked here, where
    // the output type is concrete. Spanned like `type Output`, so that a wrong return type is
    // reported at that type once.
    let output_decoder = quote_spanned! {output_ty.span()=>
        {
            #[allow(unused_imports)]
            use #core::__private::NoOutputDecoder as _;
            <#core::__private::OutputDecoding<
                <#output_ty as #core::__private::ToolReturn>::Output,
            >>::DECODER
        }
    };
    let call_fn = quote_spanned! {output_ty.span()=>
        // With the user's spans, clippy takes this for hand-written code.
        // (`async fn` here would name `Tool::call::{anon_assoc#0}` in the not-`Send` error.)
        #[allow(clippy::manual_async_fn)]
        fn call(
            ctx: &#core::ToolContext<#core::StateOf<Self>>,
            input: Self::Input,
        ) -> impl ::core::future::Future<
            Output = ::core::result::Result<Self::Output, #core::ToolError>,
        > + ::core::marker::Send {
            async move {
                <#output_ty as #core::__private::ToolReturn>::into_tool_result(
                    #fn_ident(#context_arg, input).await,
                )
            }
        }
    };

    Ok(quote! {
        #function

        #[doc = #marker_doc]
        #[derive(Debug, Clone, Copy, Default)]
        #vis struct #marker;

        impl #core::Tool for #marker {
            type Domain = #domain;
            type Input = #input_ty;
            #output_assoc
            const SPEC: #core::ToolSpec = #core::ToolSpec {
                name: #name,
                title: #title,
                domain: <#domain as #core::Domain>::NAME,
                category: #core::Category::#category_variant,
                permission: #permission,
                description: #description,
                intents: &[#(#intents),*],
                tags: &[#(#tags),*],
                timeout: #timeout,
                tasks: #tasks,
                asks_before_task: #asks_before_task,
                location: #core::SourceLocation { file: ::core::file!(), line: ::core::line!() },
            };

            #call_fn
        }

        #core::__private::inventory::submit! {
            #core::ToolEntry::of::<#marker>().with_output_decoder(#output_decoder)
        }
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
    let text = unwrap_paragraphs(&lines);
    if text.is_empty() {
        return Err(syn::Error::new(
            function.sig.ident.span(),
            "a tool needs a doc comment: it becomes the description agents read to choose the tool",
        ));
    }
    Ok(text)
}

/// Checks `async fn name(ctx: &ToolContext<State>, input: Input) -> Result<Output, E>` and
/// returns the context, input and return types.
///
/// Errors made with `new_spanned` underline the whole argument or type, not just its first
/// token.
fn signature(function: &ItemFn) -> syn::Result<(Type, Type, Type)> {
    let sig = &function.sig;
    if sig.asyncness.is_none() {
        return Err(syn::Error::new(
            sig.fn_token.span,
            "a tool must be an `async fn`: add `async` before `fn`",
        ));
    }
    if !sig.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &sig.generics,
            "a tool function cannot be generic",
        ));
    }
    if let Some(variadic) = &sig.variadic {
        return Err(syn::Error::new_spanned(
            variadic,
            "a tool function cannot be variadic",
        ));
    }
    let shape = "a tool takes two arguments: `(ctx: &ToolContext, input: YourInput)`";
    let no_params = "a tool without parameters takes `_input: NoInput`";
    let mut inputs = sig.inputs.iter();
    let Some(context) = inputs.next() else {
        return Err(syn::Error::new(
            sig.paren_token.span.join(),
            format!("{shape}; {no_params}"),
        ));
    };
    let Some(input) = inputs.next() else {
        // One argument: say which of the two is missing.
        return Err(match check_context(context) {
            Ok(_) => syn::Error::new(
                sig.paren_token.span.join(),
                format!("missing the input argument: {shape}; {no_params}"),
            ),
            Err(_) => syn::Error::new_spanned(
                context,
                format!("missing the call context: {shape}, the context first"),
            ),
        });
    };
    let context_ty = check_context(context)?;
    let input_ty = input_type(input)?;
    if let Some(extra) = inputs.next() {
        return Err(syn::Error::new_spanned(
            extra,
            format!("unexpected argument: {shape}; put more parameters in the input struct"),
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
    Ok((context_ty, input_ty, output_ty))
}

/// The context argument's type, if it is `&ToolContext` or `&ToolContext<State>`.
fn check_context(arg: &FnArg) -> syn::Result<Type> {
    let error = |tokens: &dyn quote::ToTokens| {
        syn::Error::new_spanned(
            tokens,
            "the first argument must be the call context: `ctx: &ToolContext`",
        )
    };
    let FnArg::Typed(typed) = arg else {
        return Err(syn::Error::new_spanned(
            arg,
            "a tool is a free function, not a method: remove `self`",
        ));
    };
    let names_context = |ty: &Type| {
        matches!(
            ty,
            Type::Path(path) if path.qself.is_none()
                && path.path.segments.last().is_some_and(|segment| segment.ident == "ToolContext")
        )
    };
    let Type::Reference(reference) = &*typed.ty else {
        if names_context(&typed.ty) {
            return Err(syn::Error::new_spanned(
                &typed.ty,
                "take the call context by reference: `ctx: &ToolContext`",
            ));
        }
        return Err(error(&typed.ty));
    };
    if let Some(mutability) = reference.mutability {
        return Err(syn::Error::new(
            mutability.span,
            "the context is shared: take `&ToolContext`, not `&mut`",
        ));
    }
    if names_context(&reference.elem) {
        Ok((*typed.ty).clone())
    } else {
        Err(error(reference))
    }
}

fn input_type(arg: &FnArg) -> syn::Result<Type> {
    let FnArg::Typed(typed) = arg else {
        return Err(syn::Error::new_spanned(
            arg,
            "a tool is a free function, not a method",
        ));
    };
    if let Pat::Ident(ident) = &*typed.pat
        && let Some(by_ref) = ident.by_ref
    {
        return Err(syn::Error::new(by_ref.span, "take the input by value"));
    }
    if let Type::Reference(reference) = &*typed.ty {
        return Err(syn::Error::new_spanned(
            reference,
            "the second argument is the input, taken by value: `input: YourInput`",
        ));
    }
    Ok((*typed.ty).clone())
}
