//! trajkit-model: the canonical trajectory record that every reader produces and every
//! later stage reads, with its canonical JSON form and content digests.

pub mod ascii_words;
mod byte_masks;
pub mod canonical;
pub mod compact;
pub mod extra;
mod integer_blocks;
pub mod interaction;
pub mod json_text;
pub mod lazy;
pub mod node;
pub mod record;
pub mod sha256_many;
pub mod success;
pub mod time;

pub use canonical::{content_digest, seal, sha256_hex};
pub use extra::Extra;
pub use interaction::interaction_digest;
pub use lazy::LazyValue;
pub use record::*;
pub use success::SuccessRule;

/// JSON Schema of the canonical record (published as docs/record.schema.json).
pub fn json_schema() -> serde_json::Value {
    let schema = schemars::schema_for!(Trajectory);
    serde_json::to_value(schema).unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests;
