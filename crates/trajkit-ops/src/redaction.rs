//! Redaction for exports and the gallery: the redaction engine of trajkit-verify behind
//! the hooks the export crate offers. One engine per run, so a secret gets the same
//! placeholder everywhere in the output.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use trajkit_model::Trajectory;
use trajkit_verify::redact::{RedactionReport, Redactor, Rules, RulesError};

/// The redaction options every sharing command takes (`--redact`, `--secrets`,
/// `--redaction-rules`).
#[derive(Clone, Debug, Default)]
pub struct RedactionOptions {
    /// Replace secrets by consistent placeholders before writing.
    pub redact: bool,
    /// Literal secrets to replace too, one per line (implies `redact`).
    pub secrets: Option<PathBuf>,
    /// Extra redaction rules (TOML, docs/redaction.md; implies `redact`).
    pub redaction_rules: Option<PathBuf>,
}

/// The engine and what it replaced so far.
pub struct Engine {
    state: Mutex<(Redactor, RedactionReport)>,
    describe: String,
}

impl RedactionOptions {
    /// The engine, when any redaction option is given.
    pub fn engine(&self) -> Result<Option<Arc<Engine>>, RulesError> {
        if !self.redact && self.secrets.is_none() && self.redaction_rules.is_none() {
            return Ok(None);
        }
        let mut rules = Rules::builtin();
        let mut describe = "trajkit redaction: built-in rules".to_string();
        if let Some(p) = &self.redaction_rules {
            rules.load_toml(p)?;
            describe.push_str(&format!(" + rules from {}", p.display()));
        }
        if let Some(p) = &self.secrets {
            rules.load_secrets(p)?;
            describe.push_str(" + user-listed literal secrets");
        }
        Ok(Some(Arc::new(Engine { state: Mutex::new((Redactor::new(rules), RedactionReport::default())), describe })))
    }
}

impl Engine {
    /// Redacts one record; returns the number of replacements.
    pub fn apply(&self, t: &mut Trajectory) -> Result<u64, String> {
        let mut guard = self.state.lock().map_err(|_| "redaction engine poisoned".to_string())?;
        let (redactor, report) = &mut *guard;
        redactor.redact_trajectory(t, report).map_err(|e| e.to_string())
    }

    /// Replacements so far (for the command's summary line).
    pub fn replaced(&self) -> u64 {
        self.state.lock().map(|g| g.1.replacements).unwrap_or(0)
    }

    /// The gallery's redaction hook: a record that cannot be redacted is not shown as it
    /// is (its steps are dropped).
    pub fn gallery_hook(self: Arc<Self>) -> impl Fn(&mut Trajectory) {
        move |t: &mut Trajectory| {
            if self.apply(t).is_err() {
                t.steps.clear();
            }
        }
    }
}

impl trajkit_export::Redactor for Engine {
    fn redact(&self, record: &mut Trajectory) -> Result<u64, String> {
        self.apply(record)
    }

    fn describe(&self) -> String {
        self.describe.clone()
    }
}
