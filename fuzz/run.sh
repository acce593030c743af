#!/usr/bin/env bash
# Coverage-guided fuzzing: every target under AFL++ through cargo-afl on the stable toolchain
# (sancov instrumentation, no LLVM plugins), FUZZ_SECONDS each (default 15). Exits 1 when a
# target finds a crash or a hang (copied to fuzz/artifacts/TARGET/; replay one with
# `target/afl/trajkit-afl TARGET < FILE`) or when AFL++ cannot run. Prints one line of figures
# per target (executions, corpus, edges, crashes, hangs). See fuzz/README.md.
#   FUZZ_TARGETS  targets to run (default: all)      FUZZ_MEM_MB  AFL++ memory limit (-m)
#   FUZZ_WORK     keep seeds and AFL++ output there  FUZZ_CMIN=0  skip the corpus minimisation
# `fuzz/run.sh --mutation` runs the outcome-guided mutation fuzzer instead (no instrumented
# build; FUZZ_SEED).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-15}
targets=${FUZZ_TARGETS:-formats canonical zip parquet sqlite npy redact json}

if [ "${1:-}" = --mutation ]; then
  cargo build -p trajkit-fuzz --locked --quiet
  status=0
  for t in $targets; do
    "${CARGO_TARGET_DIR:-target}/debug/trajkit-fuzz" "$t" --seconds "$seconds" --seed "${FUZZ_SEED:-1}" || status=1
  done
  exit "$status"
fi

# cargo-afl builds AFL++ (afl-fuzz, afl-cmin, its runtime) from its bundled source when it is
# installed: that needs only make and a C compiler.
afl_version=0.17.1
# `cargo afl` is run only when cargo-afl exists: after cargo's "no such command" in this
# shell, the `cargo install` that followed failed its rustc probe (seen on this machine).
if ! { command -v cargo-afl >/dev/null && cargo afl --version 2>/dev/null | grep -qF "$afl_version"; }; then
  cargo install --locked --quiet cargo-afl --version "$afl_version" </dev/null
fi
data=${XDG_DATA_HOME:-$HOME/.local/share}/afl.rs
if ! compgen -G "$data/rustc-*/afl.rs-$afl_version/afl-llvm/afl-compiler-rt.o" >/dev/null; then
  cargo afl config --build --force
fi

# The instrumented build has its own profile (target/afl/), so it never replaces the test
# build's artifacts. Optimisation level 1 instead of cargo-afl's 3, for CI's build time.
AFL_OPT_LEVEL=${AFL_OPT_LEVEL:-1} cargo afl build --locked --quiet -p trajkit-fuzz --features afl \
  --bin trajkit-afl --profile afl
bin=$PWD/target/afl/trajkit-afl

# AFL++ on a shared CI machine: no CPU frequency or core_pattern setup, no CPU pinning, no UI.
export AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_AFFINITY=1 AFL_NO_UI=1
export AFL_FAST_CAL=1 AFL_QUIET=1
mem=${FUZZ_MEM_MB:-2048}
timeout=10000
work=${FUZZ_WORK:-$(mktemp -d)}
[ -n "${FUZZ_WORK:-}" ] || trap 'rm -rf "$work"' EXIT
status=0
for t in $targets; do
  dir=$work/$t
  rm -rf "$dir"
  "$bin" seeds "$t" "$dir/seeds" >/dev/null
  seeds=$dir/seeds
  if [ "${FUZZ_CMIN:-1}" = 1 ]; then
    cargo afl cmin -i "$dir/seeds" -o "$dir/cmin" -m "$mem" -t "$timeout" -- "$bin" "$t" >"$dir/cmin.log" 2>&1 &&
      seeds=$dir/cmin
  fi
  if ! nice cargo afl fuzz -i "$seeds" -o "$dir/out" -V "$seconds" -m "$mem" -t "$timeout" -- "$bin" "$t" \
    >"$dir/fuzz.log" 2>&1; then
    echo "$t: afl-fuzz failed:"
    tail -20 "$dir/fuzz.log"
    status=1
    continue
  fi
  stats=$dir/out/default/fuzzer_stats
  get() { awk -F' *: *' -v k="$1" '$1 == k { print $2 }' "$stats"; }
  found=0
  for kind in crashes hangs; do
    for f in "$dir/out/default/$kind"/id:*; do
      [ -e "$f" ] || continue
      found=1
      mkdir -p "fuzz/artifacts/$t"
      cp "$f" "fuzz/artifacts/$t/$kind-$(basename "$f" | tr ':,' '__')"
    done
  done
  printf '%s: %s executions in %s s (%s/s), seeds %s of %s, corpus %s, edges %s (%s), crashes %s, hangs %s\n' \
    "$t" "$(get execs_done)" "$(get run_time)" "$(get execs_per_sec)" "$(ls "$seeds" | wc -l)" \
    "$(ls "$dir/seeds" | wc -l)" "$(get corpus_count)" "$(get edges_found)" "$(get bitmap_cvg)" \
    "$(get saved_crashes)" "$(get saved_hangs)"
  if [ "$found" = 1 ]; then
    echo "$t: crashes or hangs saved under fuzz/artifacts/$t/"
    status=1
  fi
done
exit "$status"
