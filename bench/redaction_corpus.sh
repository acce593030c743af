#!/usr/bin/env bash
# Builds the planted redaction corpus (54 kinds of secrets in real ATIF and Gym texts, see
# docs/redaction.md "Measured") into $1 (default: target/redaction_planted.jsonl) and prints
# recall per kind and over-redaction, from the test that asserts the same figures.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/redaction_planted.jsonl}
TRAJKIT_PLANTED_CORPUS="$(realpath -m "$out")" \
  cargo test -p trajkit-verify --test redaction_planted -- --nocapture --test-threads 1
echo "corpus: $out"
