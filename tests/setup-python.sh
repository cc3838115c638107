#!/usr/bin/env bash
# Bootstraps tests/.venv with the pinned Python interop dependencies
# (tests/python/requirements.txt). Idempotent: a stamp holding the hash of
# requirements.txt makes a second run with unchanged requirements a no-op, so it
# is fast and needs no network.
#
# Usage: tests/setup-python.sh            (env PYTHON=python3.12 to pick the interpreter)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
requirements="$here/python/requirements.txt"
stamp="$venv/.requirements.sha256"
python="${PYTHON:-python3}"

die() {
    echo "setup-python.sh: error: $*" >&2
    exit 1
}

[[ -f "$requirements" ]] || die "missing $requirements"
command -v "$python" >/dev/null 2>&1 \
    || die "'$python' not found; install Python >= 3.11 or set PYTHON=/path/to/python3"
"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' \
    || die "the interop scripts need Python >= 3.11 (asyncio.timeout), '$python' is $("$python" -V 2>&1)"

if command -v sha256sum >/dev/null 2>&1; then
    want="$(sha256sum "$requirements" | cut -d' ' -f1)"
else
    want="$(shasum -a 256 "$requirements" | cut -d' ' -f1)"
fi

if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "setup-python.sh: $venv is up to date"
    exit 0
fi

if [[ ! -x "$venv/bin/python" ]]; then
    echo "setup-python.sh: creating $venv"
    "$python" -m venv "$venv" \
        || die "'$python -m venv' failed (on Debian/Ubuntu: apt-get install python3-venv)"
fi

# Remove the stamp first so an interrupted install is retried on the next run.
rm -f "$stamp"
echo "setup-python.sh: installing $requirements"
"$venv/bin/python" -m pip install --disable-pip-version-check --quiet -r "$requirements" \
    || die "pip install -r $requirements failed (network? see the pip output above)"
"$venv/bin/python" -c 'import a2a.client, a2a.server.routes, uvicorn' \
    || die "the installed packages do not import; delete $venv and run again"

echo "$want" >"$stamp"
echo "setup-python.sh: ready ($venv)"
