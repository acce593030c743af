//! A source's success rule: which rewards count as a success (`reward >= 1.0`), shared by
//! `sources.toml` and declarative mappings.

use crate::Status;

/// A comparison of the reward with a threshold: `reward >= 1.0`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SuccessRule {
    op: Op,
    threshold: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Ge,
    Gt,
    Le,
    Lt,
    Eq,
}

impl SuccessRule {
    /// Parses `reward OP NUMBER` with OP one of `>=`, `>`, `<=`, `<`, `==`.
    pub fn parse(text: &str) -> Option<SuccessRule> {
        let rest = text.trim().strip_prefix("reward")?.trim_start();
        let (op, number) = [(">=", Op::Ge), ("<=", Op::Le), ("==", Op::Eq), (">", Op::Gt), ("<", Op::Lt)]
            .iter()
            .find_map(|(s, op)| rest.strip_prefix(s).map(|n| (*op, n)))?;
        let threshold: f64 = number.trim().parse().ok()?;
        threshold.is_finite().then_some(SuccessRule { op, threshold })
    }

    /// The status a reward gives: success when the rule holds, failure otherwise.
    pub fn status(&self, reward: f64) -> Status {
        let t = self.threshold;
        let ok = match self.op {
            Op::Ge => reward >= t,
            Op::Gt => reward > t,
            Op::Le => reward <= t,
            Op::Lt => reward < t,
            Op::Eq => reward == t,
        };
        if ok {
            Status::Success
        } else {
            Status::Failure
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_rules_parse_and_apply() {
        let r = SuccessRule::parse("reward >= 1.0").unwrap();
        assert_eq!(r.status(1.0), Status::Success);
        assert_eq!(r.status(0.99), Status::Failure);
        let r = SuccessRule::parse(" reward>0 ").unwrap();
        assert_eq!(r.status(0.0), Status::Failure);
        assert_eq!(r.status(0.5), Status::Success);
        assert!(SuccessRule::parse("score >= 1").is_none());
        assert!(SuccessRule::parse("reward >= x").is_none());
        assert!(SuccessRule::parse("reward >= inf").is_none());
    }
}
