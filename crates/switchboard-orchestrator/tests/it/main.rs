//! The orchestrator over a real registry: utterances routed, typed and called through every
//! check. One binary, a module per concern.

mod fixed_values;
mod model_routes;
