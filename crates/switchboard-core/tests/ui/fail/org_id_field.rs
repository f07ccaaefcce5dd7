use schemars::JsonSchema;
use serde::Deserialize;
use switchboard_core::ToolInput;
use validator::Validate;

#[derive(Deserialize, JsonSchema, Validate, ToolInput)]
pub struct ListShiftsInput {
    pub org_id: String,
    pub week: u32,
}

fn main() {}
