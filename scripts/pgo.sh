#!/usr/bin/env bash
# Builds trajkit with profile-guided optimization (PGO): the `trajkit` binary, or with `wheel`
# the Python package's wheel. An instrumented build runs trajkit's own reading commands on a
# training corpus (the binary through the CLI, the wheel through its Python calls,
# scripts/pgo_train.py). The release build is then compiled again with the counts it wrote, so
# the compiler lays out and inlines the hot paths as they run. Outputs are byte for byte the
# same as a plain release build's, for 6-18 % less CPU: most for inspect and validate, least for
# build and convert, whose zstd, SQLite and mimalloc are C code that the profile does not reach
# (docs/PERFORMANCE.md, step 150; gcc's own PGO of that C code measured no faster, step 151).
# Each needs its own training: a wheel built with the binary's profile read Arrow 5 % slower,
# as nothing in the CLI had run its Arrow conversion.
#
# The training corpus is made from the shipped real fixtures (tests/fixtures/real): those files
# (every format) and a small corpus of distinct rollouts made from them (bench/make_corpus.py
# --distinct, 64 MiB of Gym rows and 16 MiB of ATIF files).
#
# Needs python3 and rustup's llvm-tools (its llvm-profdata matches rustc's LLVM; added when
# missing); the wheel also maturin and pyarrow. Two release builds: about 11 minutes on 2 cores
# for the binary, 15 for the wheel. A re-run reuses the instrumented build: 5.5 minutes for the
# binary when the code has not changed.
#
# Usage: scripts/pgo.sh [binary|wheel]   (PROFILE=dist for fat LTO on top, which measured no faster)
# Writes target/pgo/trajkit or target/pgo/wheels/trajkit-*.whl, and the merged profile beside.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
what=${1:-binary}
case $what in binary | wheel) ;; *) echo "usage: scripts/pgo.sh [binary|wheel]" >&2; exit 2 ;; esac
profile=${PROFILE:-release}
out=${CARGO_TARGET_DIR:-$root/target}/pgo
host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
[ -x "$profdata" ] || rustup component add llvm-tools >/dev/null
[ -x "$profdata" ] || { echo "pgo.sh: no llvm-profdata at $profdata (rustup component add llvm-tools)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The counts go to a fixed folder, so a re-run's instrumented build has the same flags and
# rebuilds only what changed. The optimized build starts from an empty folder every time: a new
# profile means recompiling everything anyway, and a changed profile path would leave another
# copy of every crate behind. `--target` keeps the flags off build scripts and procedural
# macros (they would be instrumented too and write profiles while compiling).
raw="$out/$what-raw"
build() { # FLAG TARGET_DIR
  RUSTFLAGS="${RUSTFLAGS:-} $1" cargo build --locked --quiet --profile "$profile" -p trajkit \
    --target "$host" --target-dir "$2"
}
wheel() { # FLAG TARGET_DIR OUT_DIR
  RUSTFLAGS="${RUSTFLAGS:-} $1" CARGO_TARGET_DIR="$2" python3 -m maturin build --quiet --locked \
    --profile "$profile" --target "$host" -m crates/trajkit-py/Cargo.toml -o "$3" >/dev/null
}
# Written beside and renamed, so a reader never meets half a file.
publish() { # FILE DEST
  mkdir -p "$(dirname "$2")"
  cp "$1" "$2.tmp" && mv "$2.tmp" "$2"
}

echo "pgo.sh: instrumented $what ($profile)" >&2
rm -rf "$raw"
if [ "$what" = wheel ]; then
  { python3 -c "import pyarrow" && python3 -m maturin --version; } >/dev/null 2>&1 ||
    { echo "pgo.sh: the wheel needs maturin and pyarrow (pip install maturin pyarrow)" >&2; exit 2; }
  wheel "-Cprofile-generate=$raw" "$out/wheel-generate" "$work/generate"
  python3 -m zipfile -e "$work"/generate/trajkit-*.whl "$work/py"
else
  build "-Cprofile-generate=$raw" "$out/generate"
  bin="$out/generate/$host/$profile/trajkit"
fi

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
  [ -d "$work/lib" ] || { echo "pgo.sh: the instrumented build wrote no library" >&2; exit 1; }
}
if [ "$what" = wheel ]; then
  PYTHONPATH="$work/py" python3 scripts/pgo_train.py tests/fixtures/real -- "$work/corpus/gym" "$work/corpus/atif"
else
  train tests/fixtures/real
  train "$work/corpus/gym" "$work/corpus/atif"
fi
"$profdata" merge -o "$work/trajkit.profdata" "$raw"

echo "pgo.sh: optimized $what" >&2
# The profile is published with what was built from it, so the two always match.
if [ "$what" = wheel ]; then
  rm -rf "$out/wheel-use"
  wheel "-Cprofile-use=$work/trajkit.profdata" "$out/wheel-use" "$work/use"
  made=$(ls "$work"/use/trajkit-*.whl)
  publish "$made" "$out/wheels/$(basename "$made")"
  publish "$work/trajkit.profdata" "$out/wheels/trajkit.profdata"
  echo "$out/wheels/$(basename "$made")"
else
  rm -rf "$out/use"
  build "-Cprofile-use=$work/trajkit.profdata" "$out/use"
  publish "$out/use/$host/$profile/trajkit" "$out/trajkit"
  publish "$work/trajkit.profdata" "$out/trajkit.profdata"
  echo "$out/trajkit"
fi
