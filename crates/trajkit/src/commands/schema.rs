//! `trajkit schema`: the canonical record's JSON Schema.

use anyhow::Result;

pub fn run() -> Result<u8> {
    println!("{}", serde_json::to_string_pretty(&trajkit_model::json_schema())?);
    Ok(0)
}
