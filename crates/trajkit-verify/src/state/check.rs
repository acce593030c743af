//! Checking a state change against an expectation (`expect.toml`): the effects that must
//! happen, the collateral that is allowed, and every other change named as a violation.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::{json, Value};

use super::diff::{diff, row_label, ChangeKind, DiffSink, RowChange, RowRef, SchemaChange, Side};
use super::error::StateError;
use super::store::read_small;
use super::value::{hex, sqlite_cmp, Val};

/// At most this many violation messages are kept (the count is always exact).
const MAX_VIOLATIONS: usize = 10_000;
/// Near misses kept per expectation.
const MAX_NEAR_MISSES: usize = 5;

/// A parsed expectation file.
#[derive(Debug, Clone, Default)]
pub struct Expectation {
    pub expect: Vec<Effect>,
    pub allow: Vec<Allowance>,
    /// SHA-256 of the file's bytes: reports name the exact expectation they checked.
    pub sha256: String,
}

/// An effect that must happen.
#[derive(Debug, Clone)]
pub struct Effect {
    pub db: Option<String>,
    pub table: String,
    pub change: ChangeKind,
    /// Predicates on the row (after the change; before it for deletes).
    pub r#where: Vec<(String, Pred)>,
    /// Values the row must have after an insert or update.
    pub values: Vec<(String, Pred)>,
    /// Exactly this many matching changes; `None`: at least one.
    pub count: Option<u64>,
}

/// Collateral that is allowed.
#[derive(Debug, Clone)]
pub struct Allowance {
    pub db: Option<String>,
    pub table: String,
    pub change: Option<ChangeKind>,
    pub r#where: Vec<(String, Pred)>,
    /// For updates: only these columns may change (`None`: any).
    pub columns: Option<Vec<String>>,
    /// Allows schema changes of the table (or the index, trigger, view) with this name.
    pub schema: bool,
}

/// A predicate on one column value.
#[derive(Debug, Clone, PartialEq)]
pub enum Pred {
    Eq(Val),
    Ne(Val),
    Lt(Val),
    Le(Val),
    Gt(Val),
    Ge(Val),
    IsNull(bool),
    Contains(String),
    In(Vec<Val>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    expect: Vec<RawEffect>,
    #[serde(default)]
    allow: Vec<RawAllow>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEffect {
    db: Option<String>,
    table: String,
    change: String,
    #[serde(default, rename = "where")]
    predicates: BTreeMap<String, toml::Value>,
    #[serde(default)]
    values: BTreeMap<String, toml::Value>,
    count: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAllow {
    db: Option<String>,
    table: String,
    change: Option<String>,
    #[serde(default, rename = "where")]
    predicates: BTreeMap<String, toml::Value>,
    columns: Option<Vec<String>>,
    #[serde(default)]
    schema: bool,
}

impl Expectation {
    /// Reads and validates an expectation file.
    pub fn load(path: &Path) -> Result<Expectation, StateError> {
        let bytes = read_small(path)?;
        let sha256 = {
            use sha2::Digest;
            hex(&sha2::Sha256::digest(&bytes))
        };
        let text = std::str::from_utf8(&bytes).map_err(|e| StateError::Expect {
            path: path.to_path_buf(),
            message: format!("not UTF-8 at byte {}", e.valid_up_to()),
        })?;
        let mut exp =
            Expectation::parse(text).map_err(|message| StateError::Expect { path: path.to_path_buf(), message })?;
        exp.sha256 = sha256;
        Ok(exp)
    }

    /// Parses expectation TOML; errors name the entry and field.
    pub fn parse(text: &str) -> Result<Expectation, String> {
        let raw: RawFile = toml::from_str(text).map_err(|e| toml_message(text, &e))?;
        let mut expect = Vec::new();
        for (i, e) in raw.expect.into_iter().enumerate() {
            let at = format!("expect #{}", i + 1);
            let change = parse_change(&e.change)
                .ok_or_else(|| format!("{at}: change {:?}: want insert, delete or update", e.change))?;
            if change == ChangeKind::Delete && !e.values.is_empty() {
                return Err(format!("{at}: values: a deleted row has no values after the change (use where)"));
            }
            expect.push(Effect {
                db: e.db,
                table: e.table,
                change,
                r#where: preds(&e.predicates, &format!("{at}.where"))?,
                values: preds(&e.values, &format!("{at}.values"))?,
                count: e.count,
            });
        }
        let mut allow = Vec::new();
        for (i, a) in raw.allow.into_iter().enumerate() {
            let at = format!("allow #{}", i + 1);
            let change = match &a.change {
                Some(c) => {
                    Some(parse_change(c).ok_or_else(|| format!("{at}: change {c:?}: want insert, delete or update"))?)
                }
                None => None,
            };
            allow.push(Allowance {
                db: a.db,
                table: a.table,
                change,
                r#where: preds(&a.predicates, &format!("{at}.where"))?,
                columns: a.columns,
                schema: a.schema,
            });
        }
        Ok(Expectation { expect, allow, sha256: String::new() })
    }
}

/// A TOML error on one line: `line 3, column 9: missing field `change``.
fn toml_message(text: &str, e: &toml::de::Error) -> String {
    let message = e.message().trim_end();
    match e.span() {
        Some(span) => {
            let before = text.get(..span.start).unwrap_or("");
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
            format!("line {line}, column {column}: {message}")
        }
        None => message.to_string(),
    }
}

fn parse_change(s: &str) -> Option<ChangeKind> {
    match s {
        "insert" => Some(ChangeKind::Insert),
        "delete" => Some(ChangeKind::Delete),
        "update" => Some(ChangeKind::Update),
        _ => None,
    }
}

fn preds(map: &BTreeMap<String, toml::Value>, at: &str) -> Result<Vec<(String, Pred)>, String> {
    map.iter().map(|(k, v)| Ok((k.clone(), pred(v).map_err(|m| format!("{at}.{k}: {m}"))?))).collect()
}

fn scalar(v: &toml::Value) -> Result<Val, String> {
    Ok(match v {
        toml::Value::Integer(i) => Val::Int(*i),
        toml::Value::Float(f) => Val::Real(*f),
        toml::Value::String(s) => Val::Text(s.as_bytes().to_vec()),
        toml::Value::Boolean(b) => Val::Int(i64::from(*b)),
        toml::Value::Datetime(d) => Val::Text(d.to_string().into_bytes()),
        toml::Value::Table(t) if t.len() == 1 && t.contains_key("blob") => {
            let hexs = t.get("blob").and_then(|h| h.as_str()).ok_or("blob: want a hex string")?;
            let bytes = (0..hexs.len())
                .step_by(2)
                .map(|i| hexs.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
                .collect::<Option<Vec<u8>>>()
                .filter(|_| hexs.len().is_multiple_of(2))
                .ok_or("blob: want a hex string")?;
            Val::Blob(bytes)
        }
        other => return Err(format!("unsupported value {other}")),
    })
}

fn pred(v: &toml::Value) -> Result<Pred, String> {
    let toml::Value::Table(t) = v else { return Ok(Pred::Eq(scalar(v)?)) };
    if t.len() == 1 && t.contains_key("blob") {
        return Ok(Pred::Eq(scalar(v)?));
    }
    let [(op, arg)] = t.iter().collect::<Vec<_>>()[..] else {
        return Err("an operator table has exactly one key".into());
    };
    Ok(match op.as_str() {
        "eq" => Pred::Eq(scalar(arg)?),
        "ne" => Pred::Ne(scalar(arg)?),
        "lt" => Pred::Lt(scalar(arg)?),
        "le" => Pred::Le(scalar(arg)?),
        "gt" => Pred::Gt(scalar(arg)?),
        "ge" => Pred::Ge(scalar(arg)?),
        "is_null" => Pred::IsNull(arg.as_bool().ok_or("is_null: want true or false")?),
        "contains" => Pred::Contains(arg.as_str().ok_or("contains: want a string")?.to_string()),
        "in" => Pred::In(arg.as_array().ok_or("in: want an array")?.iter().map(scalar).collect::<Result<_, _>>()?),
        other => return Err(format!("unknown operator {other:?} (eq ne lt le gt ge is_null contains in)")),
    })
}

/// Equality for predicates: numbers by value (1 = 1.0), otherwise type and bytes.
fn pred_eq(a: &Val, b: &Val) -> bool {
    match (a, b) {
        (Val::Null, _) | (_, Val::Null) => false,
        _ => sqlite_cmp(a, b) == std::cmp::Ordering::Equal,
    }
}

impl Pred {
    /// Whether `v` (absent when the row has no such column) satisfies the predicate.
    pub fn matches(&self, v: Option<&Val>) -> bool {
        use std::cmp::Ordering::*;
        let Some(v) = v else { return false };
        let ord = |x: &Val| if matches!(v, Val::Null) { None } else { Some(sqlite_cmp(v, x)) };
        match self {
            Pred::Eq(x) => pred_eq(v, x),
            Pred::Ne(x) => !matches!(v, Val::Null) && !pred_eq(v, x),
            Pred::Lt(x) => ord(x) == Some(Less),
            Pred::Le(x) => matches!(ord(x), Some(Less | Equal)),
            Pred::Gt(x) => ord(x) == Some(Greater),
            Pred::Ge(x) => matches!(ord(x), Some(Greater | Equal)),
            Pred::IsNull(want) => matches!(v, Val::Null) == *want,
            Pred::Contains(s) => {
                matches!(v, Val::Text(t) if t.windows(s.len().max(1)).any(|w| w == s.as_bytes()) || s.is_empty())
            }
            Pred::In(xs) => xs.iter().any(|x| pred_eq(v, x)),
        }
    }

    fn describe(&self) -> String {
        match self {
            Pred::Eq(x) => format!("= {}", x.display()),
            Pred::Ne(x) => format!("!= {}", x.display()),
            Pred::Lt(x) => format!("< {}", x.display()),
            Pred::Le(x) => format!("<= {}", x.display()),
            Pred::Gt(x) => format!("> {}", x.display()),
            Pred::Ge(x) => format!(">= {}", x.display()),
            Pred::IsNull(true) => "is null".into(),
            Pred::IsNull(false) => "is not null".into(),
            Pred::Contains(s) => format!("contains {s:?}"),
            Pred::In(xs) => format!("in [{}]", xs.iter().map(Val::display).collect::<Vec<_>>().join(", ")),
        }
    }
}

fn all_match(preds: &[(String, Pred)], row: Option<RowRef<'_>>) -> bool {
    preds.iter().all(|(c, p)| p.matches(row.and_then(|r| r.get(c))))
}

fn describe_preds(preds: &[(String, Pred)]) -> String {
    preds.iter().map(|(c, p)| format!("{c} {}", p.describe())).collect::<Vec<_>>().join(" and ")
}

impl Effect {
    /// `insert into contacts where name = "Ada" with email = "ada@example.com"`.
    pub fn describe(&self) -> String {
        let verb = match self.change {
            ChangeKind::Insert => "insert into",
            ChangeKind::Delete => "delete from",
            ChangeKind::Update => "update of",
        };
        let db = self.db.as_deref().map(|d| format!("{d}:")).unwrap_or_default();
        let mut s = format!("{verb} {db}{}", self.table);
        if !self.r#where.is_empty() {
            s += &format!(" where {}", describe_preds(&self.r#where));
        }
        if !self.values.is_empty() {
            s += &format!(" with {}", describe_preds(&self.values));
        }
        s
    }

    fn targets(&self, db: &str, table: &str, kind: ChangeKind) -> bool {
        self.change == kind && self.table.eq_ignore_ascii_case(table) && self.db.as_deref().is_none_or(|d| d == db)
    }

    /// The row the predicates look at: after the change, or before it for deletes.
    fn subject<'a>(&self, c: &RowChange<'a>) -> Option<RowRef<'a>> {
        if self.change == ChangeKind::Delete {
            c.before
        } else {
            c.after
        }
    }
}

impl Allowance {
    fn covers(&self, db: &str, table: &str, c: &RowChange<'_>) -> bool {
        let subject = if c.kind == ChangeKind::Delete { c.before } else { c.after };
        self.table.eq_ignore_ascii_case(table)
            && self.db.as_deref().is_none_or(|d| d == db)
            && self.change.is_none_or(|k| k == c.kind)
            && all_match(&self.r#where, subject)
    }
}

/// The outcome for one expected effect.
#[derive(Debug, Clone, PartialEq)]
pub struct EffectResult {
    pub description: String,
    pub matched: u64,
    pub required: Option<u64>,
    /// Changes of the right kind to the right table whose `where` matched but whose
    /// values did not (the most useful hint when an effect is missing).
    pub near_misses: Vec<String>,
}

impl EffectResult {
    pub fn met(&self) -> bool {
        match self.required {
            Some(n) => self.matched == n,
            None => self.matched > 0,
        }
    }
}

/// The result of a state check.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckReport {
    pub effects: Vec<EffectResult>,
    /// Violation messages (at most 10,000 kept; `violation_count` is exact).
    pub violations: Vec<String>,
    pub violation_count: u64,
    pub changes: u64,
    pub expect_sha256: String,
}

impl CheckReport {
    /// True when every expected effect happened and nothing else did (beyond allowances).
    pub fn passed(&self) -> bool {
        self.violation_count == 0 && self.effects.iter().all(EffectResult::met)
    }

    /// Every failure as a message: missing effects first, then violations.
    pub fn failures(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .effects
            .iter()
            .enumerate()
            .filter(|(_, e)| !e.met())
            .map(|(i, e)| {
                let want = match e.required {
                    Some(n) => format!("exactly {n}"),
                    None => "at least 1".into(),
                };
                let mut m = format!(
                    "expected effect missing: expect #{} {} ({} matching rows, {want} required)",
                    i + 1,
                    e.description,
                    e.matched
                );
                if let Some(n) = e.near_misses.first() {
                    m += &format!("; near miss: {n}");
                }
                m
            })
            .collect();
        out.extend(self.violations.iter().cloned());
        if self.violation_count > self.violations.len() as u64 {
            out.push(format!("... and {} more violations", self.violation_count - self.violations.len() as u64));
        }
        out
    }

    pub fn to_json(&self) -> Value {
        let effects: Vec<Value> = self
            .effects
            .iter()
            .map(|e| {
                json!({"description": e.description, "matched": e.matched, "required": e.required,
                            "met": e.met(), "near_misses": e.near_misses})
            })
            .collect();
        json!({"passed": self.passed(), "expect_sha256": self.expect_sha256, "changes": self.changes,
               "effects": effects, "violations": self.violations, "violation_count": self.violation_count})
    }
}

/// Evaluates each change of a diff as it streams.
struct Checker<'e> {
    exp: &'e Expectation,
    show_db: bool,
    report: CheckReport,
}

impl Checker<'_> {
    fn violation(&mut self, message: String) {
        self.report.violation_count += 1;
        if self.report.violations.len() < MAX_VIOLATIONS {
            self.report.violations.push(message);
        }
    }
}

impl DiffSink for Checker<'_> {
    fn schema(&mut self, db: &str, c: &SchemaChange) {
        self.report.changes += 1;
        let allowed = self
            .exp
            .allow
            .iter()
            .any(|a| a.schema && a.table.eq_ignore_ascii_case(&c.name) && a.db.as_deref().is_none_or(|d| d == db));
        if !allowed {
            let prefix = if self.show_db { format!("{db}:") } else { String::new() };
            self.violation(format!(
                "disallowed collateral effect: schema of {} {prefix}{} {}",
                c.object,
                c.name,
                c.change()
            ));
        }
    }

    fn row(&mut self, db: &str, table: &str, c: &RowChange<'_>) {
        self.report.changes += 1;
        let mut covered = false;
        let mut covers_all = false;
        let mut covered_columns: Vec<&str> = Vec::new();
        for (i, e) in self.exp.expect.iter().enumerate() {
            if !e.targets(db, table, c.kind) || !all_match(&e.r#where, e.subject(c)) {
                continue;
            }
            if all_match(&e.values, c.after) {
                self.report.effects[i].matched += 1;
                covered = true;
                // An expected update that names no values covers whatever it changed.
                covers_all |= e.values.is_empty();
                covered_columns.extend(e.values.iter().map(|(k, _)| k.as_str()));
            } else if self.report.effects[i].near_misses.len() < MAX_NEAR_MISSES {
                let got = e
                    .values
                    .iter()
                    .filter(|(k, p)| !p.matches(c.after.and_then(|r| r.get(k))))
                    .map(|(k, _)| {
                        format!(
                            "{k} = {}",
                            c.after
                                .and_then(|r| r.get(k))
                                .map(Val::display)
                                .unwrap_or_else(|| "(no such column)".into())
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                let label = row_label(db, table, c, self.show_db);
                self.report.effects[i].near_misses.push(format!("{label} {} with {got}", c.kind.past()));
            }
        }
        let allowances: Vec<&Allowance> = self.exp.allow.iter().filter(|a| a.covers(db, table, c)).collect();
        let label = row_label(db, table, c, self.show_db);
        match c.kind {
            ChangeKind::Update => {
                if covers_all || allowances.iter().any(|a| a.columns.is_none()) {
                    return;
                }
                let uncovered: Vec<_> = c
                    .changed
                    .iter()
                    .filter(|col| {
                        !covered_columns.iter().any(|k| k.eq_ignore_ascii_case(col.column))
                            && !allowances.iter().any(|a| {
                                a.columns
                                    .as_ref()
                                    .is_some_and(|cs| cs.iter().any(|k| k.eq_ignore_ascii_case(col.column)))
                            })
                    })
                    .collect();
                if !uncovered.is_empty() {
                    let partial = RowChange { changed: uncovered.into_iter().copied().collect(), ..c.clone() };
                    self.violation(format!("disallowed collateral effect: {label} updated ({})", partial.describe()));
                }
            }
            _ => {
                if !covered && allowances.is_empty() {
                    self.violation(format!(
                        "disallowed collateral effect: {label} {} ({})",
                        c.kind.past(),
                        c.describe()
                    ));
                }
            }
        }
    }
}

/// Checks the change from `start` to `end` against `exp`.
pub fn check(exp: &Expectation, start: &Side, end: &Side) -> Result<CheckReport, StateError> {
    let show_db = start.database_names().len() > 1 || end.database_names().len() > 1;
    let effects = exp
        .expect
        .iter()
        .map(|e| EffectResult { description: e.describe(), matched: 0, required: e.count, near_misses: Vec::new() })
        .collect();
    let report = CheckReport {
        effects,
        violations: Vec::new(),
        violation_count: 0,
        changes: 0,
        expect_sha256: exp.sha256.clone(),
    };
    let mut checker = Checker { exp, show_db, report };
    diff(start, end, &mut checker)?;
    Ok(checker.report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expectation_files_are_validated_with_the_entry_named() {
        let err = Expectation::parse("[[expect]]\ntable = \"t\"\nchange = \"upsert\"\n").unwrap_err();
        assert_eq!(err, "expect #1: change \"upsert\": want insert, delete or update");
        let err = Expectation::parse("[[allow]]\ntable = \"t\"\nwhere = { a = { like = \"x\" } }\n").unwrap_err();
        assert_eq!(err, "allow #1.where.a: unknown operator \"like\" (eq ne lt le gt ge is_null contains in)");
        let err =
            Expectation::parse("[[expect]]\ntable = \"t\"\nchange = \"delete\"\nvalues = { a = 1 }\n").unwrap_err();
        assert_eq!(err, "expect #1: values: a deleted row has no values after the change (use where)");
    }

    #[test]
    fn predicates_compare_like_sqlite() {
        assert!(Pred::Eq(Val::Int(1)).matches(Some(&Val::Real(1.0))));
        assert!(!Pred::Eq(Val::Int(1)).matches(Some(&Val::Text(b"1".to_vec()))));
        assert!(!Pred::Eq(Val::Null).matches(Some(&Val::Null)));
        assert!(Pred::IsNull(true).matches(Some(&Val::Null)));
        assert!(Pred::Gt(Val::Int(5)).matches(Some(&Val::Real(5.5))));
        assert!(!Pred::Gt(Val::Int(5)).matches(Some(&Val::Null)));
        assert!(Pred::Contains("@example".into()).matches(Some(&Val::Text(b"ada@example.com".to_vec()))));
        assert!(Pred::In(vec![Val::Int(2), Val::Int(3)]).matches(Some(&Val::Int(3))));
        assert!(!Pred::Eq(Val::Int(1)).matches(None));
    }
}
