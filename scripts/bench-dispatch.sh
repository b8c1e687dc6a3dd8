#!/usr/bin/env bash
# Measures what a dispatch costs: a lead fanning out to N background
# members (each on its own scripted model, answering at once) against the
# same lead answering directly. Prints the wall-time and peak-memory
# difference per child; asserts nothing.
#
#   cargo build --release -p evoflux-cli && bash scripts/bench-dispatch.sh [N] [RUNS]
set -euo pipefail
n="${1:-8}"
runs="${2:-20}"
bin="${EVOFLUX_BIN:-$(cd "$(dirname "$0")/.." && pwd)/target/release/evoflux}"
[ -x "$bin" ] || { echo "build first: cargo build --release -p evoflux-cli" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/repo/.git" "$work/repo/.evoflux/agents" "$work/home"
calls=""
for i in $(seq 1 "$n"); do
  printf 'turns:\n  - reply: {text: "answer %s"}\n' "$i" > "$work/m$i.yaml"
  printf -- '---\nrole: member\ndescription: Member %s.\nmodel: scripted:%s\n---\nAnswer.\n' \
    "$i" "$work/m$i.yaml" > "$work/repo/.evoflux/agents/m$i.md"
  calls="$calls        - {name: agent, arguments: {agent_id: m$i, message: \"task $i\", background: true}}\n"
done
printf "turns:\n  - reply:\n      tool_calls:\n$calls  - reply: {text: waiting}\n  - reply: {text: done}\n" > "$work/fanout.yaml"
printf 'turns:\n  - reply: {text: done}\n' > "$work/direct.yaml"
cd "$work/repo"
export HOME="$work/home"
cmd() { echo "$bin --json run --model scripted:$work/$1.yaml go"; }
# Warm up, and check that the fan-out really dispatches.
started=$($(cmd fanout) | grep -c '"type":"dispatch_ended"')
[ "$started" = "$n" ] || { echo "expected $n dispatches, saw $started" >&2; exit 1; }
hyperfine --warmup 2 --runs "$runs" --export-json "$work/h.json" \
  "$(cmd direct)" "$(cmd fanout)" > /dev/null
rss() { /usr/bin/time -f '%M' "$bin" --json run --model "scripted:$work/$1.yaml" go 2>&1 >/dev/null | tail -1; }
python3 - "$work/h.json" "$n" "$(rss direct)" "$(rss fanout)" <<'PY'
import json, sys
h = json.load(open(sys.argv[1]))["results"]
n = int(sys.argv[2]); direct_kib, fanout_kib = int(sys.argv[3]), int(sys.argv[4])
d, f = (r["median"] * 1000 for r in h)
print(f"direct: median {d:.1f} ms, {direct_kib / 1024:.1f} MiB peak")
print(f"fan-out to {n} background children: median {f:.1f} ms, {fanout_kib / 1024:.1f} MiB peak")
print(f"per child: {(f - d) / n:.2f} ms, {(fanout_kib - direct_kib) / 1024 / n:.2f} MiB")
PY
