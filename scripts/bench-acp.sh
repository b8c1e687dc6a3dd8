#!/usr/bin/env bash
# Measures what a remote dispatch over the Agent Client Protocol adds to a
# local one. Both cases are `evoflux --json run --mode coding` whose lead,
# on a scripted model that answers at once, dispatches once with the `agent`
# tool and then answers `done`; only the child differs:
#   local:  a fresh copy of the lead (a dispatch without agent_id), a child
#           session in the same process on the same script;
#   remote: the external agent `helper`, which is `evoflux acp` itself on a
#           scripted model of its own, started for the dispatch and spoken
#           to over stdio (no result_contract: any final text).
# Runs alternate between the cases after one warm-up run of each. Prints the
# median and p90 wall time of each (process start included) and their
# difference; asserts nothing (a run that fails stops it).
#
#   cargo build --release -p evoflux-cli && bash scripts/bench-acp.sh [RUNS] [BIN]
set -euo pipefail
export LC_ALL=C
runs="${1:-20}"
bin="${2:-${EVOFLUX_BIN:-$(cd "$(dirname "$0")/.." && pwd)/target/release/evoflux}}"
[ -x "$bin" ] || { echo "build first: cargo build --release -p evoflux-cli" >&2; exit 1; }
# Absolute: the external agent's command names it.
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
home="$work/home"
repo="$work/repo"
mkdir -p "$repo/.git" "$home/.config/evoflux"

# A TOML basic string.
toml() { local s="${1//\\/\\\\}"; s="${s//\"/\\\"}"; printf '"%s"' "$s"; }

# Local: the lead dispatches a copy of itself, which plays the next turn.
cat > "$work/local.yaml" <<'YAML'
turns:
  - reply:
      tool_calls:
        - {name: agent, arguments: {message: "Answer at once"}}
  - expect: {user: {contains: "Answer at once"}}
    reply: {text: answered}
  - expect: {tool_result: {contains: answered}}
    reply: {text: done}
YAML
# Remote: the lead dispatches `helper`, whose own script answers.
cat > "$work/remote.yaml" <<'YAML'
turns:
  - reply:
      tool_calls:
        - {name: agent, arguments: {agent_id: helper, message: "Answer at once"}}
  - expect: {tool_result: {contains: answered}}
    reply: {text: done}
YAML
cat > "$work/child.yaml" <<'YAML'
turns:
  - expect: {user: {contains: "Answer at once"}}
    reply: {text: answered}
YAML
# Declared for both cases, so they differ only in the dispatch.
cat > "$home/.config/evoflux/config.toml" <<TOML
[agents.external.helper]
command = [$(toml "$bin"), "acp", "--model", $(toml "scripted:$work/child.yaml")]
description = "Answers at once, over ACP."
TOML

# One run of case $1; prints its wall time in microseconds. The environment
# is only HOME and PATH: the external agent inherits HOME but no EVOFLUX_* or
# XDG_* variable, so the lead must find its directories the same way.
once() {
  local case="$1" start end
  start=$(date +%s%N)
  if ! (cd "$repo" && env -i HOME="$home" PATH="$PATH" "$bin" --json run --mode coding \
    --model "scripted:$work/$case.yaml" look > "$work/$case.out" 2> "$work/$case.err"); then
    echo "the $case run failed:" >&2
    cat "$work/$case.err" "$work/$case.out" >&2
    exit 1
  fi
  end=$(date +%s%N)
  echo $(( (end - start) / 1000 ))
}

# Warm up, and check that each case dispatched once and its child answered.
for case in local remote; do
  once "$case" > /dev/null
  ended=$(grep -c '"type":"dispatch_ended"' "$work/$case.out" || true)
  answered=$(grep '"type":"tool_ended"' "$work/$case.out" | grep -c '"content":"answered' || true)
  if [ "$ended" != 1 ] || [ "$answered" != 1 ]; then
    echo "the $case run did not dispatch once and get its answer:" >&2
    cat "$work/$case.out" >&2
    exit 1
  fi
done

: > "$work/local.us"
: > "$work/remote.us"
for _ in $(seq 1 "$runs"); do
  once local >> "$work/local.us"
  once remote >> "$work/remote.us"
done

# "median p90" in milliseconds of the microsecond figures in $1 (p90 by
# nearest rank).
stats() {
  sort -n "$1" | awk '{a[NR] = $1} END {
    m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
    r = int(0.9 * NR); if (r < 0.9 * NR) r++
    printf "%.1f %.1f\n", m / 1000, a[r] / 1000
  }'
}
read -r lm lp < <(stats "$work/local.us")
read -r rm rp < <(stats "$work/remote.us")
echo "$runs runs of each, process start included"
printf 'local child (a copy of the lead):         median %8.1f ms, p90 %8.1f ms\n' "$lm" "$lp"
printf 'remote child (evoflux acp over stdio):    median %8.1f ms, p90 %8.1f ms\n' "$rm" "$rp"
printf 'added by the remote dispatch:             median %+8.1f ms, p90 %+8.1f ms\n' \
  "$(awk -v a="$rm" -v b="$lm" 'BEGIN {print a - b}')" \
  "$(awk -v a="$rp" -v b="$lp" 'BEGIN {print a - b}')"
