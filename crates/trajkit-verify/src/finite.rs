//! trajkit's finite-number convention (docs/numbers.md): no JSON trajkit writes holds NaN or
//! ±Infinity (they are not JSON), and none turns them into `null` — which is what serde_json
//! silently does with a non-finite `f64`. A record holding one is refused, naming the field.
//!
//! In the canonical record only `outcome.reward`, `outcome.reward_components` and
//! `metrics.cost_usd` (run and step) are floats outside `serde_json::Value`; a `Value` cannot
//! hold a non-finite number. So checking those fields, subagents included, covers the record.

use trajkit_model::{Metrics, Trajectory};

/// A non-finite number in a record: the JSON path of the field and the value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{path}: non-finite number {value} has no JSON form (trajkit does not write it as null)")]
pub struct NonFiniteNumber {
    pub path: String,
    pub value: f64,
}

/// The first non-finite float of `t` (and its subagents), or `Ok`.
pub fn check_trajectory(t: &Trajectory) -> Result<(), NonFiniteNumber> {
    check_at(t, "$")
}

fn check_at(t: &Trajectory, at: &str) -> Result<(), NonFiniteNumber> {
    number(t.outcome.reward, || format!("{at}.outcome.reward"))?;
    for (name, v) in &t.outcome.reward_components {
        number(Some(*v), || format!("{at}.outcome.reward_components[{}]", serde_json::Value::from(name.as_str())))?;
    }
    metrics(t.metrics.as_ref(), || format!("{at}.metrics"))?;
    for (i, s) in t.steps.iter().enumerate() {
        metrics(s.metrics.as_ref(), || format!("{at}.steps[{i}].metrics"))?;
    }
    for (i, s) in t.subagents.iter().enumerate() {
        check_at(&s.trajectory, &format!("{at}.subagents[{i}].trajectory"))?;
    }
    Ok(())
}

fn metrics(m: Option<&Metrics>, at: impl Fn() -> String) -> Result<(), NonFiniteNumber> {
    number(m.and_then(|m| m.cost_usd), || format!("{}.cost_usd", at()))
}

fn number(v: Option<f64>, path: impl Fn() -> String) -> Result<(), NonFiniteNumber> {
    match v {
        Some(v) if !v.is_finite() => Err(NonFiniteNumber { path: path(), value: v }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use trajkit_model::{Role, Step, Subagent};

    use super::*;

    fn record() -> Trajectory {
        serde_json::from_value(json!({
            "id": "t", "schema_version": trajkit_model::SCHEMA_VERSION,
            "provenance": {"format": "gym", "path": "a.jsonl", "sha256": "0"},
            "task": {"key": "k", "key_source": "explicit"},
            "outcome": {"status": "success", "verification": "source_evaluator", "reward": 1.0},
        }))
        .unwrap()
    }

    #[test]
    fn serde_json_would_write_null_so_the_record_is_refused() {
        let mut t = record();
        t.outcome.reward = Some(f64::NAN);
        // The hazard this module exists for: serde_json writes NaN as null, silently.
        assert!(serde_json::to_string(&t).unwrap().contains("\"reward\":null"));
        let err = check_trajectory(&t).unwrap_err();
        assert_eq!(err.path, "$.outcome.reward");
        assert_eq!(
            err.to_string(),
            "$.outcome.reward: non-finite number NaN has no JSON form (trajkit does not write it as null)"
        );
    }

    #[test]
    fn every_float_field_is_checked_with_its_path() {
        let mut t = record();
        assert_eq!(check_trajectory(&t), Ok(()));
        t.outcome.reward_components.insert("tests passed".into(), f64::INFINITY);
        assert_eq!(check_trajectory(&t).unwrap_err().path, "$.outcome.reward_components[\"tests passed\"]");
        t.outcome.reward_components.clear();
        let mut step = Step::new(Role::Assistant, None);
        step.metrics = Some(Metrics { cost_usd: Some(f64::NEG_INFINITY), ..Default::default() });
        t.steps = vec![Step::new(Role::User, None), step];
        assert_eq!(check_trajectory(&t).unwrap_err().path, "$.steps[1].metrics.cost_usd");
        t.steps.clear();
        let mut child = record();
        child.metrics = Some(Metrics { cost_usd: Some(f64::NAN), ..Default::default() });
        t.subagents.push(Subagent { spawned_by_step: None, spawned_by_tool_call: None, trajectory: Box::new(child) });
        assert_eq!(check_trajectory(&t).unwrap_err().path, "$.subagents[0].trajectory.metrics.cost_usd");
    }
}
