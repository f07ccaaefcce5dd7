use schemars::JsonSchema;
use serde::Deserialize;
use switchboard_core::ToolInput;
use validator::Validate;

#[derive(Deserialize, JsonSchema, Validate, ToolInput)]
pub struct ListShiftsInput {
    #[serde(rename = "orgId")]
    pub organisation: String,
    pub week: u32,
}

fn main() {}
