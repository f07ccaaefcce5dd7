//! The pages over a real HTTP server (`serve_http_with` with the web router mounted beside
//! `/mcp`), through a real HTTP client: negotiation, sign-in, forms, anti-CSRF, bad input.
//!
//! The seeded week (Monday 2026-11-23) has open shifts: Tuesday's evening shift
//! `acme-2026-11-24-pm` is one. `sam` is staff in acme, `mark` its manager, `alice` its admin, `gina` globex's
//! admin.

mod bad_input;
mod forms;
mod negotiation;
mod server;
mod sign_in;
mod workflows;
