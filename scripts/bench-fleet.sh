#!/usr/bin/env bash
# Measures what an agent step of `evoflux fleet run` costs end to end: a
# chain of N v4 coder steps (each bounded to its own file), each a worker
# session that writes its file and answers its mutation report, on one
# scripted model that answers at once; write boundaries enforced through
# git. Prints the median wall time of the whole run and per step, and the
# same for a one-step chain (process start and one step); asserts nothing.
#
#   cargo build --release -p evoflux-cli && bash scripts/bench-fleet.sh [N] [RUNS]
set -euo pipefail
n="${1:-20}"
runs="${2:-5}"
bin="${EVOFLUX_BIN:-$(cd "$(dirname "$0")/.." && pwd)/target/release/evoflux}"
[ -x "$bin" ] || { echo "build first: cargo build --release -p evoflux-cli" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The fleet and the script for a chain of $1 steps, in $work/$1/.
prepare() {
  local steps="$1" dir="$work/$1" i deps
  mkdir -p "$dir"
  {
    printf -- '---\nversion: 4\nname: chain\ndescription: A chain of coder steps.\nmaxWorkers: 1\nonFailure: stop\nsteps:\n'
    for i in $(seq 0 $((steps - 1))); do
      deps="[]"
      [ "$i" -gt 0 ] && deps="[s$((i - 1))]"
      printf '  - {id: s%s, agent: coder, scope: workspace, writes: [src/f%s.rs], dependencies: %s}\n' "$i" "$i" "$deps"
    done
    printf -- '---\nWrite the files.\n'
  } > "$dir/chain.md"
  {
    printf 'turns:\n'
    for i in $(seq 0 $((steps - 1))); do
      printf '  - reply:\n      tool_calls:\n        - {name: write, arguments: {path: src/f%s.rs, content: "pub fn f%s() {}\\n"}}\n' "$i" "$i"
      printf '  - reply: {text: %s}\n' \
        "'{\"mutatedPaths\":[\"src/f$i.rs\"],\"validations\":[{\"name\":\"read back\",\"passed\":true,\"evidence\":\"wrote it\"}]}'"
    done
  } > "$dir/script.yaml"
}

# Median milliseconds of $runs runs of the $1-step chain.
measure() {
  local steps="$1" dir="$work/$1" r run start end
  local times=()
  for r in $(seq 1 "$runs"); do
    run="$dir/run$r"
    mkdir -p "$run/home" "$run/repo/.evoflux/fleets"
    cp "$dir/chain.md" "$run/repo/.evoflux/fleets/"
    echo x > "$run/repo/README.md"
    git -C "$run/repo" init -q
    git -C "$run/repo" add -A
    git -C "$run/repo" -c user.name=bench -c user.email=bench@example.com commit -qm init
    (cd "$run/repo" && HOME="$run/home" "$bin" trust > /dev/null)
    start=$(date +%s%N)
    (cd "$run/repo" && HOME="$run/home" "$bin" --json fleet run chain \
      --model "scripted:$dir/script.yaml" > "$run/report.json")
    end=$(date +%s%N)
    grep -q '"status": "succeeded"' "$run/report.json" || { echo "run failed: $run/report.json" >&2; exit 1; }
    times+=($(( (end - start) / 1000000 )))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

prepare 1
prepare "$n"
one="$(measure 1)"
many="$(measure "$n")"
echo "1 step: $one ms (process start included)"
echo "$n steps: $many ms, $(( many / n )) ms per step; $(( (many - one) / (n - 1) )) ms per step after the first"
