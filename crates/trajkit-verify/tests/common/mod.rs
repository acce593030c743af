//! Synthetic secrets for the redaction tests. None of these is a real credential: each is
//! generated here, deterministically, in the published shape of its provider's keys
//! (prefix, alphabet, length), so no secret-like literal is stored in the repository.

#![allow(dead_code)]

const B62: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B64URL: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const HEX: &[u8] = b"0123456789abcdef";
const UPPER32: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const UPPER_DIGITS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const LETTERS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const DIGITS: &[u8] = b"0123456789";
const PASSWORD: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789!#%^*-_.+=~";
const WORDS: &[&str] = &["bluebird", "sunflower", "marmalade", "blackjack", "riverside", "moonlight"];

/// splitmix64: a tiny deterministic generator.
struct Rng(u64);

impl Rng {
    fn new(seed: &str) -> Rng {
        Rng(seed.bytes().fold(0x9e37_79b9_7f4a_7c15, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)))
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn pick(&mut self, alphabet: &[u8], n: usize) -> String {
        (0..n).map(|_| alphabet[(self.next() % alphabet.len() as u64) as usize] as char).collect()
    }
}

fn base64(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn pem(label: &str, rng: &mut Rng, lines: usize) -> String {
    let body: Vec<String> = (0..lines).map(|_| rng.pick(B64, 64)).collect();
    format!("-----BEGIN {label}-----\n{}\n-----END {label}-----", body.join("\n"))
}

/// The synthetic secret for a corpus slot (`kind` or `kind#n` for another of the same kind).
pub fn secret(slot: &str) -> String {
    let kind = slot.split('#').next().unwrap_or(slot);
    let r = &mut Rng::new(slot);
    match kind {
        "openai_key" => format!("sk-proj-{}T3BlbkFJ{}", r.pick(B64URL, 74), r.pick(B64URL, 74)),
        "openai_legacy" => format!("sk-{}T3BlbkFJ{}", r.pick(B62, 20), r.pick(B62, 20)),
        "anthropic_key" => format!("sk-ant-api03-{}AA", r.pick(B64URL, 93)),
        "aws_access_key_id" => format!("AKIA{}", r.pick(UPPER32, 16)),
        "aws_secret" => r.pick(B64, 40),
        "github_classic" => format!("ghp_{}", r.pick(B62, 36)),
        "github_fine" => format!("github_pat_{}_{}", r.pick(B62, 22), r.pick(B62, 59)),
        "gitlab" => format!("glpat-{}", r.pick(B64URL, 20)),
        "slack_bot" => format!("xoxb-{}-{}-{}", r.pick(DIGITS, 12), r.pick(DIGITS, 13), r.pick(B62, 24)),
        "slack_webhook" => format!(
            "https://hooks.slack.com/services/T{}/B{}/{}",
            r.pick(UPPER_DIGITS, 8),
            r.pick(UPPER_DIGITS, 10),
            r.pick(B62, 24)
        ),
        "google_api_key" => format!("AIza{}", r.pick(B64URL, 35)),
        "stripe_live" => format!("sk_live_{}", r.pick(B62, 24)),
        "hf_token" => format!("hf_{}", r.pick(LETTERS, 34)),
        "npm_token" => format!("npm_{}", r.pick(B62, 36)),
        "groq_key" => format!("gsk_{}", r.pick(B62, 52)),
        "xai_key" => format!("xai-{}", r.pick(B62, 80)),
        "replicate" => format!("r8_{}", r.pick(B62, 37)),
        "sendgrid" => format!("SG.{}.{}", r.pick(B64URL, 22), r.pick(B64URL, 43)),
        "jwt" => format!("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ{}.{}", r.pick(B64URL, 60), r.pick(B64URL, 43)),
        "opaque" => r.pick(B62, 40),
        "rsa_private_key" => pem("RSA PRIVATE KEY", r, 4),
        "openssh_private_key" => pem("OPENSSH PRIVATE KEY", r, 3),
        "ec_private_key" => pem("EC PRIVATE KEY", r, 2),
        "password" => format!("{}{}{}", r.pick(LETTERS, 1), r.pick(PASSWORD, 11), r.pick(DIGITS, 1)),
        "password_word" => format!("{}{}", WORDS[(r.next() % WORDS.len() as u64) as usize], r.pick(DIGITS, 4)),
        "hex32" => r.pick(HEX, 32),
        "hex64" => r.pick(HEX, 64),
        "azure_key" => format!("{}==", r.pick(B64, 86)),
        "mailgun_key" => format!("key-{}", r.pick(HEX, 32)),
        "basic_auth" => base64(format!("ci:{}", r.pick(B62, 14)).as_bytes()),
        "literal" => format!("acme-deploy-{}", r.pick(B62, 10)),
        "django_secret" => {
            format!("django-insecure-{}", r.pick(b"abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*(-_=+)", 50))
        }
        "twilio_key" => format!("SK{}", r.pick(HEX, 32)),
        "openrouter_key" => format!("sk-or-v1-{}", r.pick(HEX, 64)),
        "langfuse_key" => format!(
            "sk-lf-{}-{}-{}-{}-{}",
            r.pick(HEX, 8),
            r.pick(HEX, 4),
            r.pick(HEX, 4),
            r.pick(HEX, 4),
            r.pick(HEX, 12)
        ),
        "langsmith_key" => format!("lsv2_pt_{}_{}", r.pick(HEX, 32), r.pick(HEX, 10)),
        "gitlab_runner" => format!("glrt-{}", r.pick(B64URL, 20)),
        "slack_app" => format!("xapp-1-A{}-{}-{}", r.pick(UPPER_DIGITS, 10), r.pick(DIGITS, 13), r.pick(HEX, 64)),
        "google_oauth_secret" => format!("GOCSPX-{}", r.pick(B64URL, 28)),
        "stripe_webhook" => format!("whsec_{}", r.pick(B62, 32)),
        "mailchimp_key" => format!("{}-us{}", r.pick(HEX, 32), 1 + r.next() % 20),
        "shopify_token" => format!("shpat_{}", r.pick(HEX, 32)),
        "pypi_token" => format!("pypi-AgEIcHlwaS5vcmc{}", r.pick(B64URL, 70)),
        "digitalocean_token" => format!("dop_v1_{}", r.pick(HEX, 64)),
        "databricks_token" => format!("dapi{}", r.pick(HEX, 32)),
        "square_token" => format!("EAAA{}", r.pick(B64URL, 60)),
        "atlassian_token" => format!("ATATT3{}", r.pick(B64URL, 186)),
        "linear_key" => format!("lin_api_{}", r.pick(B62, 40)),
        "postman_key" => format!("PMAK-{}-{}", r.pick(HEX, 24), r.pick(HEX, 34)),
        "newrelic_key" => format!("NRAK-{}", r.pick(UPPER_DIGITS, 27)),
        "doppler_token" => format!("dp.pt.{}", r.pick(B62, 43)),
        "vault_token" => format!("hvs.{}", r.pick(B64URL, 91)),
        "supabase_token" => format!("sbp_{}", r.pick(HEX, 40)),
        "grafana_token" => format!("glsa_{}_{}", r.pick(B62, 32), r.pick(HEX, 8)),
        "sentry_token" => format!("sntrys_{}", r.pick(B64, 80)),
        "perplexity_key" => format!("pplx-{}", r.pick(B62, 48)),
        "notion_token" => format!("ntn_{}", r.pick(B62, 46)),
        "telegram_bot_token" => format!("{}:AA{}", 10_000_000 + r.next() % 89_999_999, r.pick(B64URL, 33)),
        "age_secret_key" => format!("AGE-SECRET-KEY-1{}", r.pick(b"QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)),
        other => panic!("no generator for slot kind {other}"),
    }
}

/// A corpus text with its `§slot§` markers filled: the text and each planted secret's
/// byte range and slot name.
pub fn fill(template: &str) -> (String, Vec<(std::ops::Range<usize>, String)>) {
    let mut out = String::new();
    let mut planted = Vec::new();
    for (i, part) in template.split('§').enumerate() {
        if i % 2 == 0 {
            out.push_str(part);
        } else {
            let value = secret(part);
            planted.push((out.len()..out.len() + value.len(), part.to_string()));
            out.push_str(&value);
        }
    }
    (out, planted)
}
