//! Where the generated code finds `switchboard_core`: directly, or through the `switchboard`
//! facade, whichever the user's crate depends on.

use proc_macro_crate::{FoundCrate, crate_name};
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::Ident;

/// The path to `switchboard_core` as the calling crate can name it.
pub(crate) fn core_path() -> TokenStream {
    match crate_name("switchboard-core") {
        Ok(FoundCrate::Name(name)) => {
            let ident = Ident::new(&name, Span::call_site());
            quote!(::#ident)
        }
        // `Itself` means core's own tests and doctests, which are separate crates.
        Ok(FoundCrate::Itself) => quote!(::switchboard_core),
        Err(_) => match crate_name("switchboard") {
            Ok(FoundCrate::Name(name)) => {
                let ident = Ident::new(&name, Span::call_site());
                quote!(::#ident::__core)
            }
            Ok(FoundCrate::Itself) => quote!(::switchboard::__core),
            Err(_) => quote!(::switchboard_core),
        },
    }
}
