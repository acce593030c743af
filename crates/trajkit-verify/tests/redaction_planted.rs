//! Recall per kind of secret and over-redaction, measured on a planted corpus built from real
//! fixture texts (docs/redaction.md, "Measured"): each kind's SYNTHETIC secret (see `common`)
//! is planted in three contexts into real step texts of ATIF and Gym files; ordinary ids,
//! hashes and UUIDs (from the real fixtures and generated) must be left alone.
//! `TRAJKIT_PLANTED_CORPUS=FILE` also writes the corpus as JSON Lines (bench/redaction_corpus.sh).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use trajkit_verify::redact::{Redactor, Rules};

fn real(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/real").join(rel)
}

/// Provider-shaped kinds: planted bare, with no context word naming a secret.
const SHAPED: &[&str] = &[
    "openai_key",
    "openai_legacy",
    "anthropic_key",
    "openrouter_key",
    "langfuse_key",
    "langsmith_key",
    "aws_access_key_id",
    "github_classic",
    "github_fine",
    "gitlab",
    "gitlab_runner",
    "slack_bot",
    "slack_app",
    "slack_webhook",
    "google_api_key",
    "google_oauth_secret",
    "stripe_live",
    "stripe_webhook",
    "hf_token",
    "npm_token",
    "pypi_token",
    "groq_key",
    "xai_key",
    "replicate",
    "sendgrid",
    "twilio_key",
    "mailchimp_key",
    "shopify_token",
    "digitalocean_token",
    "databricks_token",
    "square_token",
    "atlassian_token",
    "linear_key",
    "postman_key",
    "newrelic_key",
    "doppler_token",
    "vault_token",
    "supabase_token",
    "grafana_token",
    "sentry_token",
    "perplexity_key",
    "notion_token",
    "telegram_bot_token",
    "age_secret_key",
    "jwt",
    "rsa_private_key",
    "openssh_private_key",
];

/// Three contexts a shaped secret is planted in (`{}` is the secret).
const SHAPED_CONTEXTS: &[&str] = &[
    "I exported the credential {} and reran the failing command.",
    "{\"provider\": {\"credentials\": \"{}\"}}",
    "curl -s -H 'X-Auth: {}' https://api.internal.test/v1/items | jq .",
];

/// Kinds that are a secret only by their context: (slot, three contexts).
const CONTEXTUAL: &[(&str, [&str; 3])] = &[
    (
        "aws_secret",
        [
            "[default]\nregion = us-east-1\naws_secret_access_key = {}\n",
            "export AWS_SECRET_ACCESS_KEY={}",
            "{\"AccessKeyId\": \"ASIAEXAMPLE\", \"SecretAccessKey\": \"{}\"}",
        ],
    ),
    (
        "azure_key",
        [
            "DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey={};EndpointSuffix=core.windows.net",
            "conn = \"AccountName=acme;AccountKey={}\"",
            "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey={}",
        ],
    ),
    (
        "password",
        ["mysql -u root --password='{}' shop", "DB_PASSWORD={}", "Server=db01;Database=shop;User Id=app;Password={};"],
    ),
    (
        "password_word",
        [
            "postgresql://app:{}@db.internal:5432/shop",
            "redis://:{}@cache.internal:6379/0",
            "jdbc:mysql://db.internal/shop?user=app&password={}&useSSL=true",
        ],
    ),
    (
        "basic_auth",
        [
            "Authorization: Basic {}",
            "curl -H \"Authorization: Basic {}\" https://ci.internal/api",
            "headers = {'Authorization': 'Basic {}'}",
        ],
    ),
    ("hex32", ["api_key = \"{}\"", "WANDB_API_KEY={}", "client_secret: {}"]),
    ("mailgun_key", ["MAILGUN_KEY={}", "mg = Mailgun(api_key='{}')", "the key is {} for the sandbox domain"]),
];

/// Real step texts of 200 to 4,000 bytes from ATIF and Gym fixtures, in file order.
fn hosts() -> Vec<String> {
    let mut texts = Vec::new();
    let files = [
        "atif/claude-code-pass-v1.7.trajectory.json",
        "atif/terminus2-hello-world-v1.3.trajectory.json",
        "gym/tau2__example_rollouts.jsonl",
        "gym/aviary__example_rollouts.jsonl",
    ];
    for rel in files {
        let text = std::fs::read_to_string(real(rel)).unwrap();
        let docs: Vec<serde_json::Value> = if rel.ends_with(".jsonl") {
            text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
        } else {
            vec![serde_json::from_str(&text).unwrap()]
        };
        for d in &docs {
            strings(d, &mut texts);
        }
    }
    texts
}

fn strings(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) if (200..4000).contains(&s.len()) && s.contains(' ') => out.push(s.clone()),
        serde_json::Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        serde_json::Value::Object(m) => m.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

/// One planted text: the host text with a context sentence in the middle.
struct Plant {
    slot: String,
    text: String,
    secret: std::ops::Range<usize>,
}

fn corpus() -> Vec<Plant> {
    let hosts = hosts();
    let mut plants = Vec::new();
    let mut all: Vec<(String, Vec<&str>)> = SHAPED.iter().map(|s| (s.to_string(), SHAPED_CONTEXTS.to_vec())).collect();
    all.extend(CONTEXTUAL.iter().map(|(s, c)| (s.to_string(), c.to_vec())));
    for (slot, contexts) in all {
        for (i, context) in contexts.iter().enumerate() {
            let secret = common::secret(&format!("{slot}#{i}"));
            let host = &hosts[plants.len() * 7 % hosts.len()];
            let cut = host[..host.len() / 2].rfind(' ').unwrap_or(0);
            let (before, after) = context.split_once("{}").unwrap();
            let start = cut + 1 + before.len();
            let text = format!("{} {before}{secret}{after} {}", &host[..cut], &host[cut..]);
            plants.push(Plant { slot: slot.clone(), secret: start..start + secret.len(), text });
        }
    }
    plants
}

#[test]
fn recall_per_kind_on_secrets_planted_in_real_texts() {
    let plants = corpus();
    if let Ok(path) = std::env::var("TRAJKIT_PLANTED_CORPUS") {
        let lines: Vec<String> = plants
            .iter()
            .map(|p| {
                serde_json::json!({"slot": p.slot, "text": p.text, "secret": [p.secret.start, p.secret.end]})
                    .to_string()
            })
            .collect();
        std::fs::write(path, lines.join("\n") + "\n").unwrap();
    }
    let mut redactor = Redactor::new(Rules::builtin());
    let mut per_slot: BTreeMap<&str, (u32, u32)> = BTreeMap::new();
    let (mut outside, mut host_bytes) = (0usize, 0usize);
    for p in &plants {
        let spans = redactor.scan(&p.text);
        let caught = spans.iter().any(|(r, _)| r.start <= p.secret.start && r.end >= p.secret.end);
        let e = per_slot.entry(p.slot.as_str()).or_default();
        e.0 += 1;
        e.1 += u32::from(caught);
        // Bytes replaced outside the planted secret (over-redaction of real text or context).
        outside += spans
            .iter()
            .map(|(r, _)| r.len() - r.end.min(p.secret.end).saturating_sub(r.start.max(p.secret.start)))
            .sum::<usize>();
        host_bytes += p.text.len() - p.secret.len();
    }
    for (slot, (n, caught)) in &per_slot {
        println!("{slot:24} {caught}/{n}");
    }
    let missed: Vec<&str> = per_slot.iter().filter(|(_, (n, c))| c < n).map(|(s, _)| *s).collect();
    let plants_caught: u32 = per_slot.values().map(|(_, c)| c).sum();
    println!(
        "{} kinds, {} plants, {plants_caught} caught, {outside} of {host_bytes} other bytes replaced",
        per_slot.len(),
        plants.len()
    );
    assert_eq!((per_slot.len(), plants.len()), (54, 162));
    assert_eq!(missed, Vec::<&str>::new());
    assert_eq!(plants_caught, 162);
    assert_eq!(outside, 0);
}

/// Ordinary identifiers: every id-like string of the real fixtures plus generated UUIDs,
/// digests and provider ids, in the sentences where they usually appear.
#[test]
fn ordinary_ids_hashes_and_uuids_are_left_alone() {
    let id_like = regex::Regex::new(
        r#""((?:[0-9a-f]{7,64})|(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})|(?:(?:call|toolu|toolu_vrtx|chatcmpl|msg|resp|run|fc|req|tool|trace|span)[_-][A-Za-z0-9_-]{6,}))""#,
    )
    .unwrap();
    let mut ids: Vec<String> = Vec::new();
    let mut stack = vec![real("")];
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()).collect();
            entries.sort();
            stack.extend(entries);
        } else if let Ok(text) = std::fs::read_to_string(&p) {
            ids.extend(id_like.captures_iter(&text).map(|c| c[1].to_string()));
        }
    }
    ids.sort();
    ids.dedup();
    let real_ids = ids.len();
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut hex = |n: usize| -> String {
        (0..n)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                char::from(b"0123456789abcdef"[(rng % 16) as usize])
            })
            .collect()
    };
    for _ in 0..500 {
        let u = hex(32);
        ids.push(format!("{}-{}-4{}-a{}-{}", &u[..8], &u[8..12], &u[13..16], &u[17..20], &u[20..]));
        ids.push(hex(32));
        ids.push(hex(40));
        ids.push(hex(64));
        ids.push(format!("sha256:{}", hex(64)));
    }
    let mut redactor = Redactor::new(Rules::builtin());
    let sentences = ["commit {}", "the run id is {} (see logs)", "{\"id\": \"{}\"}", "trace_id={} span=1"];
    let mut flagged = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let text = sentences[i % sentences.len()].replace("{}", id);
        if !redactor.scan(&text).is_empty() {
            flagged.push(text);
        }
    }
    println!("{real_ids} ids from the real fixtures, {} in all, {} flagged", ids.len(), flagged.len());
    assert_eq!(flagged, Vec::<String>::new());
    assert_eq!((real_ids, ids.len()), (3311, 5811));
}
