//! `--redact`, `--secrets`, `--redaction-rules`: the flags of every sharing command,
//! turned into `trajkit_ops::RedactionOptions`.

use std::path::PathBuf;

/// The redaction options every sharing command takes.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct RedactArgs {
    /// Replace secrets (API keys, tokens, private keys, passwords) by consistent placeholders before writing.
    #[arg(long)]
    pub redact: bool,
    /// Literal secrets to replace too, one per line (implies --redact).
    #[arg(long, value_name = "FILE")]
    pub secrets: Option<PathBuf>,
    /// Extra redaction rules (TOML, see docs/redaction.md; implies --redact).
    #[arg(long, value_name = "FILE")]
    pub redaction_rules: Option<PathBuf>,
}

impl RedactArgs {
    /// The options these flags give.
    pub fn options(&self) -> trajkit_ops::RedactionOptions {
        trajkit_ops::RedactionOptions {
            redact: self.redact,
            secrets: self.secrets.clone(),
            redaction_rules: self.redaction_rules.clone(),
        }
    }

    /// The redaction engine, when any of these flags is given.
    pub fn engine(&self) -> Result<Option<std::sync::Arc<trajkit_ops::Engine>>, trajkit_verify::redact::RulesError> {
        self.options().engine()
    }
}
