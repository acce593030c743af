//! Gate figures on a schedule built by `schedule::build` and limits written for each rule
//! (the prices are made up for the tests; no real provider's price list is implied).

use super::*;

const SEED: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

const LIMITS: &str = r#"
cycle_cap_usd = 50

[providers.openai]
input_usd_per_mtok = 2.5
output_usd_per_mtok = 10
cap_usd = 30

[providers.anthropic]
input_usd_per_mtok = 3
output_usd_per_mtok = 15

[arms.A]
provider = "openai"
requests_per_candidate = 10
max_input_tokens = 8000
max_output_tokens = 1000
input_counted = true

[arms.B]
provider = "openai"
requests_per_candidate = 10
max_input_tokens = 8000
max_output_tokens = 1000
input_counted = true

[arms.C]
provider = "anthropic"
requests_per_candidate = 10
max_input_tokens = 8000
max_output_tokens = 1000
input_counted = true
"#;

/// 32 blocks of arms A, B, C: 32 candidates per arm.
fn plan() -> Schedule {
    let apps = ["gmail".to_string(), "phone".to_string()];
    let arms = ["A", "B", "C"].map(String::from);
    schedule::build(SEED, &apps, &arms, 32).unwrap()
}

fn limits(text: &str) -> Limits {
    toml::from_str(text).unwrap()
}

fn codes(g: &Gate) -> Vec<&str> {
    g.failures.iter().map(|f| f.code).collect()
}

#[test]
fn liability_is_candidates_times_bounded_tokens_times_price() {
    let g = check(&plan(), &limits(LIMITS));
    // openai: 8000 × $2.5/M + 1000 × $10/M = $0.03 a request; 32 candidates × 10 requests.
    // anthropic: 8000 × $3/M + 1000 × $15/M = $0.039 a request.
    let arms: Vec<(&str, u64, Option<u64>, Option<f64>)> =
        g.arms.iter().map(|a| (a.arm.as_str(), a.candidates, a.max_requests, a.liability_usd)).collect();
    assert_eq!(
        arms,
        [("A", 32, Some(320), Some(9.6)), ("B", 32, Some(320), Some(9.6)), ("C", 32, Some(320), Some(12.48))]
    );
    assert_eq!(g.providers["openai"], ProviderLiability { liability_usd: Some(19.2), cap_usd: Some(30.0) });
    assert_eq!(g.providers["anthropic"], ProviderLiability { liability_usd: Some(12.48), cap_usd: None });
    assert_eq!((g.candidates, g.total_usd, g.passed), (96, Some(31.68), true));
    assert_eq!(codes(&g), Vec::<&str>::new());
}

#[test]
fn caps_fail_the_gate_per_provider_and_in_total() {
    let text = LIMITS.replace("cycle_cap_usd = 50", "cycle_cap_usd = 31.67").replace("cap_usd = 30", "cap_usd = 19.19");
    let g = check(&plan(), &limits(&text));
    assert!(!g.passed);
    let got: Vec<(&str, &str)> = g.failures.iter().map(|f| (f.code, f.message.as_str())).collect();
    assert_eq!(
        got,
        [
            ("provider_cap_exceeded", "provider openai: liability $19.2 exceeds its cap $19.19"),
            ("cycle_cap_exceeded", "maximum liability $31.68 exceeds the cycle cap $31.67"),
        ]
    );
    // Exactly at the cap passes.
    let at_cap =
        LIMITS.replace("cycle_cap_usd = 50", "cycle_cap_usd = 31.68").replace("cap_usd = 30", "cap_usd = 19.2");
    assert!(check(&plan(), &limits(&at_cap)).passed);
}

#[test]
fn an_uncounted_or_unbounded_request_fails_the_gate_with_unbounded_liability() {
    let mut l = limits(LIMITS);
    l.arms.remove("A");
    l.arms.get_mut("B").unwrap().max_output_tokens = None;
    l.arms.get_mut("C").unwrap().input_counted = false;
    let g = check(&plan(), &l);
    assert_eq!(codes(&g), ["arm_without_limits", "output_unbounded", "input_not_counted"]);
    assert_eq!(g.total_usd, None);
    assert_eq!(g.providers["openai"].liability_usd, None);
    assert_eq!(g.arms[1].max_output_tokens, None);
    // A provider without a price, and an arm without any bound.
    let mut l = limits(LIMITS);
    l.providers.remove("anthropic");
    l.arms.insert(
        "B".into(),
        ArmLimits {
            provider: "openai".into(),
            requests_per_candidate: None,
            max_input_tokens: None,
            max_output_tokens: Some(1),
            input_counted: true,
        },
    );
    let g = check(&plan(), &l);
    assert_eq!(codes(&g), ["requests_unbounded", "input_unbounded", "provider_without_price"]);
}

#[test]
fn a_failed_gate_is_a_valid_pre_execution_rejected_ledger_line() {
    let s = plan();
    let g = check(&s, &limits(&LIMITS.replace("cycle_cap_usd = 50", "cycle_cap_usd = 20")));
    let line = ledger_entry("gate-1", &s, &g, "trajkit gate schedule.json --limits limits.toml");
    let l = crate::ledger::parse(format!("{line}\n").as_bytes());
    assert_eq!(l.findings, []);
    let a = &l.attempts[0];
    assert_eq!((a.id.as_str(), a.classification.as_str()), ("gate-1", "pre_execution_rejected"));
    assert_eq!(a.environment, "gmail, phone");
    assert_eq!(a.failed, ["cycle_cap_exceeded: maximum liability $31.68 exceeds the cycle cap $20"]);
    assert_eq!(
        a.passed,
        ["96 candidates planned (3 arms, 32 blocks)", "every request's input counted and bounded before sending"]
    );
    assert_eq!(a.output, "maximum liability $31.68 against the cycle cap $20");
}

#[test]
fn bad_limits_and_schedules_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("cycle_cap_usd = -1", "cycle_cap_usd: -1 is not an amount of dollars"),
        ("cycle_cap_usd = 1\ncolour = 2", "unknown field `colour`"),
        (
            "cycle_cap_usd = 1\n[providers.x]\ninput_usd_per_mtok = nan\noutput_usd_per_mtok = 1",
            "providers.x.input_usd_per_mtok: NaN",
        ),
        ("cycle_cap_usd = 1\n[arms.A]\nmax_input_tokens = 3", "missing field `provider`"),
    ];
    for (text, want) in cases {
        let p = dir.path().join("limits.toml");
        std::fs::write(&p, text).unwrap();
        let err = read_limits(&p).unwrap_err().to_string();
        assert!(err.starts_with(&p.display().to_string()) && err.contains(want), "{err}");
    }
    let p = dir.path().join("s.json");
    std::fs::write(&p, schedule::to_json(&plan())).unwrap();
    assert_eq!(read_schedule(&p).unwrap(), plan());
    std::fs::write(&p, br#"{"format": "other"}"#).unwrap();
    let err = read_schedule(&p).unwrap_err().to_string();
    assert!(err.contains("not a trajkit.schedule/1 schedule"), "{err}");
}
