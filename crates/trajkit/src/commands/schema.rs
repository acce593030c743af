//! `trajkit schema`: the canonical record's JSON Schema.

use crate::pipe::outln;
use anyhow::Result;
use std::io::Write;

pub fn run() -> Result<u8> {
    outln!("{}", serde_json::to_string_pretty(&trajkit_model::json_schema())?);
    Ok(0)
}
