#!/usr/bin/env bash
# Builds the `trajkit` binary with profile-guided optimization (PGO). An instrumented build runs
# trajkit's own reading commands on a training corpus. The release build is then compiled again
# with the counts it wrote, so the compiler lays out and inlines the hot paths as they run.
# Outputs are byte for byte the same as a plain release build's, for 6-18 % less CPU: most for
# inspect and validate, least for build and convert, whose zstd, SQLite and mimalloc are C code
# that the profile does not reach (docs/PERFORMANCE.md, step 150).
#
# The training corpus is made from the shipped real fixtures (tests/fixtures/real): those files
# (every format) and a small corpus of distinct rollouts made from them (bench/make_corpus.py
# --distinct, 64 MiB of Gym rows and 16 MiB of ATIF files).
#
# Needs python3 and rustup's llvm-tools (its llvm-profdata matches rustc's LLVM; added when
# missing). Two release builds: about 10 minutes on 2 cores.
#
# Usage: scripts/pgo.sh   (PROFILE=dist for fat LTO on top, which measured no faster)
# Writes target/pgo/trajkit (the binary) and target/pgo/trajkit.profdata (the merged profile).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
profile=${PROFILE:-release}
out=${CARGO_TARGET_DIR:-$root/target}/pgo
host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
[ -x "$profdata" ] || rustup component add llvm-tools >/dev/null
[ -x "$profdata" ] || { echo "pgo.sh: no llvm-profdata at $profdata (rustup component add llvm-tools)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# `--target` keeps the flags off build scripts and procedural macros (they would be
# instrumented too and write profiles while compiling).
build() { # FLAG TARGET_DIR
  RUSTFLAGS="${RUSTFLAGS:-} $1" cargo build --locked --quiet --profile "$profile" -p trajkit \
    --target "$host" --target-dir "$2"
}

echo "pgo.sh: instrumented build ($profile)" >&2
build "-Cprofile-generate=$work/raw" "$out/generate"
bin="$out/generate/$host/$profile/trajkit"

echo "pgo.sh: training" >&2
python3 bench/make_corpus.py "$work/corpus" --gym-mb 64 --atif-mb 16 --distinct >/dev/null
# Exit codes are not checked: the fixtures hold files that are meant to be rejected.
train() { # INPUT...
  "$bin" inspect "$@" >/dev/null 2>&1 || true
  "$bin" validate "$@" >/dev/null 2>&1 || true
  "$bin" convert "$@" -o "$work/out.jsonl.zst" >/dev/null 2>&1 || true
  rm -rf "$work/lib"
  "$bin" build "$@" -o "$work/lib" >/dev/null 2>&1 || true
  "$bin" export "$work/lib" --view full --split train -o "$work/train.jsonl.zst" >/dev/null 2>&1 || true
}
train tests/fixtures/real
train "$work/corpus/gym" "$work/corpus/atif"
[ -d "$work/lib" ] || { echo "pgo.sh: the instrumented build wrote no library" >&2; exit 1; }
"$profdata" merge -o "$work/trajkit.profdata" "$work/raw"

echo "pgo.sh: optimized build" >&2
build "-Cprofile-use=$work/trajkit.profdata" "$out/use"
# Written beside and renamed, so a reader never meets half a file.
cp "$out/use/$host/$profile/trajkit" "$out/trajkit.tmp" && mv "$out/trajkit.tmp" "$out/trajkit"
cp "$work/trajkit.profdata" "$out/trajkit.profdata.tmp" && mv "$out/trajkit.profdata.tmp" "$out/trajkit.profdata"
echo "$out/trajkit"
