//! What counts as a secret: built-in detectors (provider key formats, bearer tokens,
//! private keys, passwords in assignments), secret-bearing JSON keys, user literals
//! (`--secrets`) and user rules (`--rules rules.toml`). Documented in docs/redaction.md.

use std::path::{Path, PathBuf};

use regex::Regex;
use serde::Deserialize;

/// Shortest literal accepted from a secrets file: shorter ones would redact ordinary text.
pub const MIN_LITERAL: usize = 4;

/// What can be wrong with a rules or secrets file; each names the file and line or rule.
#[derive(Debug, thiserror::Error)]
pub enum RulesError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: {message}")]
    Toml { path: PathBuf, message: String },
    #[error("{path}: {what}: {message}")]
    Invalid { path: PathBuf, what: String, message: String },
}

/// Extra acceptance test a detector's match must pass (cuts over-redaction of words and
/// identifiers that share a provider's prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Every match is a secret.
    None,
    /// The secret contains a digit.
    Digit,
    /// The secret contains a digit, an uppercase and a lowercase letter (random keys do).
    Random,
    /// Upper- and lowercase letters (random letter-only tokens).
    MixedCase,
    /// Not a reference or placeholder (`$VAR`, `<password>`, `****`, `os.environ[...]`).
    NotReference,
    /// A password-like value: not a reference, and a digit, symbol, mixed case or 12+ characters.
    Password,
    /// An assigned value that is not a reference and has a digit (code assigns variables and
    /// labels such as `'proxy-handled'`, which have none).
    Value,
}

/// One pattern-based detector: the secret is the first capture group that took part in the
/// match, or the whole match when the regex has no groups.
#[derive(Debug, Clone)]
pub struct Detector {
    pub kind: String,
    pub regex: Regex,
    pub check: Check,
}

/// Built-in detectors in priority order (earlier wins where two overlap):
/// `(kind, regex, check)`. `\b` is an ASCII word boundary (see `compile`).
pub const BUILTIN: &[(&str, &str, Check)] = &[
    (
        "private_key",
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?:[\s\S]*?-----END[A-Z0-9 ]*PRIVATE KEY-----|[\s\S]*)",
        Check::None,
    ),
    ("anthropic_key", r"\bsk-ant-[a-z]+[0-9]{2}-[A-Za-z0-9_-]{20,}", Check::None),
    ("openrouter_key", r"\bsk-or-v1-[0-9a-f]{64}\b", Check::None),
    ("langfuse_key", r"\bsk-lf-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", Check::None),
    ("langsmith_key", r"\blsv2_(?:pt|sk)_[0-9a-f]{32}_[0-9a-f]{10}\b", Check::None),
    ("openai_key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}", Check::Random),
    ("sk_hex_key", r"\bsk-[0-9a-f]{32}\b", Check::Digit),
    ("aws_access_key_id", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b", Check::None),
    (
        "aws_secret_access_key",
        r#"(?i)\b(?:aws_?)?secret_?access_?key\b["']?(?:\s*[:=]\s*|\s+)["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+]|$)"#,
        Check::None,
    ),
    (
        "github_token",
        r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b|\bgithub_pat_[A-Za-z0-9_]{22,255}\b",
        Check::None,
    ),
    ("gitlab_token", r"\b(?:glpat|glptt|gldt|glrt|glcbt|glft|glsoat)-[A-Za-z0-9_-]{20,}", Check::None),
    ("slack_token", r"\b(?:xox[abposre]|xapp)-[A-Za-z0-9-]{10,}", Check::Digit),
    ("slack_webhook", r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_-]{20,}", Check::None),
    ("google_api_key", r"\bAIza[0-9A-Za-z_-]{35}", Check::None),
    ("google_oauth", r"\bGOCSPX-[A-Za-z0-9_-]{28}\b|\bya29\.[A-Za-z0-9_-]{30,}", Check::None),
    ("stripe_key", r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}|\bwhsec_[A-Za-z0-9]{32,}", Check::None),
    ("huggingface_token", r"\bhf_[A-Za-z0-9]{30,}\b", Check::MixedCase),
    ("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b", Check::None),
    ("groq_key", r"\bgsk_[A-Za-z0-9]{48,}\b", Check::None),
    ("xai_key", r"\bxai-[A-Za-z0-9]{60,}\b", Check::None),
    ("replicate_token", r"\br8_[A-Za-z0-9]{36,}\b", Check::None),
    ("sendgrid_key", r"\bSG\.[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{40,}", Check::None),
    ("twilio_key", r"\bSK[0-9a-fA-F]{32}\b", Check::Digit),
    ("mailgun_key", r"\bkey-[0-9a-f]{32}\b", Check::Digit),
    ("mailchimp_key", r"\b[0-9a-f]{32}-us[0-9]{1,2}\b", Check::None),
    ("azure_storage_key", r"(?i)\b(?:AccountKey|SharedAccessKey)=([A-Za-z0-9+/]{40,}={0,2})", Check::None),
    ("shopify_token", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b", Check::None),
    ("pypi_token", r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}", Check::None),
    ("digitalocean_token", r"\bdo[por]_v1_[a-f0-9]{64}\b", Check::None),
    ("databricks_token", r"\bdapi[a-f0-9]{32}(?:-[0-9])?\b", Check::Digit),
    ("square_token", r"\bsq0(?:atp|csp)-[A-Za-z0-9_-]{22,43}\b|\bEAAA[A-Za-z0-9_-]{60}\b", Check::Digit),
    ("atlassian_token", r"\bATATT3[A-Za-z0-9_=-]{150,}", Check::None),
    ("linear_key", r"\blin_api_[A-Za-z0-9]{40}\b", Check::None),
    ("postman_key", r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b", Check::None),
    ("newrelic_key", r"\bNRAK-[A-Z0-9]{27}\b", Check::None),
    ("doppler_token", r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}\b", Check::None),
    ("vault_token", r"\bhvs\.[A-Za-z0-9_-]{90,}|\b[a-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}", Check::None),
    ("supabase_token", r"\bsbp_[a-f0-9]{40}\b", Check::None),
    ("grafana_token", r"\bglsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b|\bglc_[A-Za-z0-9+/]{32,}={0,2}", Check::None),
    ("sentry_token", r"\bsntry[su]_[A-Za-z0-9+/=_-]{40,}", Check::None),
    ("perplexity_key", r"\bpplx-[A-Za-z0-9]{48}\b", Check::None),
    ("notion_token", r"\bntn_[A-Za-z0-9]{40,50}\b|\bsecret_[A-Za-z0-9]{43}\b", Check::Random),
    ("telegram_bot_token", r"\b[0-9]{8,10}:AA[A-Za-z0-9_-]{33}\b", Check::None),
    ("age_secret_key", r"\bAGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}\b", Check::None),
    ("jwt", r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}", Check::None),
    ("bearer_token", r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{16,}=*)", Check::Digit),
    ("basic_auth", r#"(?i)\bauthorization["']?\s*[:=]\s*["']?basic\s+([A-Za-z0-9+/]{8,}={0,2})"#, Check::None),
    ("url_password", r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@]*:([^\s/@]+)@[A-Za-z0-9.\[-]", Check::NotReference),
    (
        "password",
        r#"(?i)\b(?:password|passwd|pwd|passphrase)\b["']?\s*[:=]\s*(?:"([^"\n]{4,128})"|'([^'\n]{4,128})'|([^\s"',;<>}\])]{4,}))|(?i)--password[= ](?:"([^"\n]{4,128})"|'([^'\n]{4,128})'|([^\s"']{4,}))|(?i)\bpassword\s+is\s+["']?([^\s"',;]{4,})"#,
        Check::Password,
    ),
    (
        "assigned_secret",
        r#"(?i)\b(?:api[_-]?key|secret[_-]?key|client[_-]?secret|access[_-]?token|auth[_-]?token|refresh[_-]?token|api[_-]?token|private[_-]?token|secret)\b["']?\s*[:=]\s*(?:"([^"\s]{12,})"|'([^'\s]{12,})'|([A-Za-z0-9._~+/=-]{12,}))"#,
        Check::Digit,
    ),
    (
        "env_secret",
        r#"\b(?:[A-Z][A-Z0-9_]*_)?(?:API_KEY|APIKEY|SECRET|SECRET_KEY|TOKEN|PASSWORD|PASSWD|ACCESS_KEY)\s*=\s*["']?([^\s"';]{8,})"#,
        Check::Value,
    ),
];

/// JSON keys (lowercase, `-` read as `_`) whose string value is a secret as a whole, by
/// suffix: `(suffix, kind)`; the first suffix that ends the key wins.
pub const SECRET_FIELDS: &[(&str, &str)] = &[
    ("password", "password"),
    ("passwd", "password"),
    ("passphrase", "password"),
    ("api_key", "api_key"),
    ("apikey", "api_key"),
    ("client_secret", "secret"),
    ("secret_key", "secret"),
    ("secret_access_key", "secret"),
    ("access_token", "token"),
    ("refresh_token", "token"),
    ("id_token", "token"),
    ("auth_token", "token"),
    ("session_token", "token"),
    ("api_token", "token"),
    ("bearer_token", "token"),
    ("private_token", "token"),
    ("private_key", "private_key"),
    ("authorization", "authorization"),
    ("cookie", "cookie"),
];

/// JSON keys that are secret fields only when they are the whole key (as suffixes they
/// would catch `is_secret`, `pwd_hint`).
pub const SECRET_FIELDS_EXACT: &[(&str, &str)] = &[("secret", "secret"), ("pwd", "password")];

/// Compiles a built-in pattern with `\b` as an ASCII word boundary: the DFA then never falls
/// back to the slow engine on non-ASCII text.
fn compile(pattern: &str) -> Result<Regex, regex::Error> {
    Regex::new(&pattern.replace(r"\b", r"(?-u:\b)"))
}

/// The complete rule set a redactor runs.
#[derive(Debug, Clone)]
pub struct Rules {
    pub detectors: Vec<Detector>,
    /// User literals (`--secrets`), each replaced wherever it occurs (kind `literal`).
    pub literals: Vec<String>,
    /// Extra secret-bearing JSON keys from `rules.toml` (exact, normalized): `(key, kind)`.
    pub fields: Vec<(String, String)>,
    /// Built-in field rules are on unless `rules.toml` switches them off.
    pub builtin_fields: bool,
}

/// `rules.toml` (docs/redaction.md).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    /// Built-in detector kinds to switch off (`"fields"` switches off the built-in key rules).
    #[serde(default)]
    disable: Vec<String>,
    /// Extra JSON keys whose string values are secrets: key -> kind.
    #[serde(default)]
    fields: std::collections::BTreeMap<String, String>,
    /// Extra detectors, tried after the built-in ones.
    #[serde(default)]
    detector: Vec<DetectorSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DetectorSpec {
    kind: String,
    regex: String,
}

fn valid_kind(kind: &str) -> bool {
    kind.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
        && kind.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

impl Rules {
    /// Every built-in detector and field rule, no literals.
    pub fn builtin() -> Rules {
        let detectors = BUILTIN
            .iter()
            .filter_map(|(kind, pattern, check)| {
                // The built-in patterns are constants covered by tests; none fails to compile.
                compile(pattern).ok().map(|regex| Detector { kind: kind.to_string(), regex, check: *check })
            })
            .collect();
        Rules { detectors, literals: Vec::new(), fields: Vec::new(), builtin_fields: true }
    }

    /// Applies a `rules.toml` on top of the current rules.
    pub fn apply_toml(&mut self, text: &str, path: &Path) -> Result<(), RulesError> {
        let file: RulesFile =
            toml::from_str(text).map_err(|e| RulesError::Toml { path: path.to_path_buf(), message: e.to_string() })?;
        let invalid = |what: String, message: String| RulesError::Invalid { path: path.to_path_buf(), what, message };
        for kind in &file.disable {
            if kind == "fields" {
                self.builtin_fields = false;
            } else if BUILTIN.iter().any(|(k, _, _)| k == kind) {
                self.detectors.retain(|d| &d.kind != kind);
            } else {
                return Err(invalid("disable".into(), format!("{kind:?} is not a built-in detector")));
            }
        }
        for (key, kind) in &file.fields {
            if !valid_kind(kind) {
                return Err(invalid(format!("fields.{key}"), format!("kind {kind:?} is not [a-z][a-z0-9_]*")));
            }
            self.fields.push((normalize_key(key), kind.clone()));
        }
        for (i, spec) in file.detector.iter().enumerate() {
            let what = format!("detector[{i}] ({})", spec.kind);
            if !valid_kind(&spec.kind) {
                return Err(invalid(what, format!("kind {:?} is not [a-z][a-z0-9_]*", spec.kind)));
            }
            let regex = Regex::new(&spec.regex).map_err(|e| invalid(what.clone(), e.to_string()))?;
            if regex.is_match("") {
                return Err(invalid(what, "the regex matches the empty string".into()));
            }
            self.detectors.push(Detector { kind: spec.kind.clone(), regex, check: Check::None });
        }
        Ok(())
    }

    /// Reads and applies a `rules.toml` file.
    pub fn load_toml(&mut self, path: &Path) -> Result<(), RulesError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| RulesError::Io { path: path.to_path_buf(), source })?;
        self.apply_toml(&text, path)
    }

    /// Reads a secrets file: one literal per line, exactly as written (a trailing `\r` is
    /// dropped), empty lines skipped; a literal under 4 characters is an error naming its line.
    pub fn load_secrets(&mut self, path: &Path) -> Result<(), RulesError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| RulesError::Io { path: path.to_path_buf(), source })?;
        for (i, line) in text.split('\n').enumerate() {
            let line = line.strip_suffix('\r').unwrap_or(line);
            if line.is_empty() {
                continue;
            }
            if line.chars().count() < MIN_LITERAL {
                return Err(RulesError::Invalid {
                    path: path.to_path_buf(),
                    what: format!("line {}", i + 1),
                    message: format!("a secret must have at least {MIN_LITERAL} characters"),
                });
            }
            self.literals.push(line.to_string());
        }
        Ok(())
    }

    /// The kind of secret a JSON key holds, if it is a secret-bearing key.
    pub fn field_kind(&self, key: &str) -> Option<&str> {
        let k = normalize_key(key);
        if let Some((_, kind)) = self.fields.iter().find(|(f, _)| *f == k) {
            return Some(kind);
        }
        if !self.builtin_fields {
            return None;
        }
        SECRET_FIELDS_EXACT
            .iter()
            .find(|(f, _)| *f == k)
            .or_else(|| SECRET_FIELDS.iter().find(|(f, _)| k.ends_with(f)))
            .map(|(_, kind)| *kind)
    }
}

/// Lowercase with `-` read as `_` (`X-Api-Key` → `x_api_key`).
fn normalize_key(key: &str) -> String {
    key.to_ascii_lowercase().replace('-', "_")
}

/// True for values that name or stand for a secret rather than being one: environment
/// references, template slots, masks, code that reads it, and already-redacted text.
pub fn looks_like_reference(v: &str) -> bool {
    let lower = v.to_ascii_lowercase();
    let first = v.chars().next();
    v.is_empty()
        || matches!(first, Some('$' | '%' | '<' | '{' | '['))
        || v.chars().all(|c| Some(c) == first)
        || v.contains("***")
        || v.contains('(')
        || lower.contains("xxx")
        || lower.contains("redacted")
        || lower.contains("environ")
        || lower.contains("getenv")
        || lower.contains("process.env")
        || v.contains("%s")
        || v.contains("%d")
        || v.contains("{}")
        || lower.starts_with("your")
        || lower.starts_with("example")
        || matches!(
            lower.as_str(),
            "none"
                | "null"
                | "true"
                | "false"
                | "password"
                | "secret"
                | "undefined"
                | "empty"
                | "dummy"
                | "fake"
                | "placeholder"
                | "unused"
                | "not-needed"
                | "n/a"
        )
}

impl Check {
    /// Whether a matched secret passes this check.
    pub fn accepts(self, v: &str) -> bool {
        let digit = v.bytes().any(|b| b.is_ascii_digit());
        let upper = v.bytes().any(|b| b.is_ascii_uppercase());
        let lower = v.bytes().any(|b| b.is_ascii_lowercase());
        match self {
            Check::None => true,
            Check::Digit => digit,
            Check::Random => digit && upper && lower,
            Check::MixedCase => upper && lower,
            Check::NotReference => !looks_like_reference(v),
            Check::Value => digit && !looks_like_reference(v),
            Check::Password => {
                let symbol = v.bytes().any(|b| b.is_ascii_punctuation());
                let long_word = v.chars().count() >= 12 && !v.contains(char::is_whitespace);
                !looks_like_reference(v) && (digit || symbol || (upper && lower) || long_word)
            }
        }
    }
}
