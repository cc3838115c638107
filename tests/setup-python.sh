#!/usr/bin/env bash
# Bootstraps tests/.venv with the pinned Python interop dependencies
# (tests/python/requirements.txt), and tests/.venv03 with the a2a-sdk 0.3 line
# (tests/python/requirements03.txt). Idempotent: a stamp holding the hash of
# requirements.txt makes a second run with unchanged requirements a no-op, so it
# is fast and needs no network.
#
# Usage: tests/setup-python.sh            (env PYTHON=python3.12 to pick the interpreter)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
requirements="$here/python/requirements.txt"
python="${PYTHON:-python3}"

die() {
    echo "setup-python.sh: error: $*" >&2
    exit 1
}

command -v "$python" >/dev/null 2>&1 \
    || die "'$python' not found; install Python >= 3.11 or set PYTHON=/path/to/python3"
"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' \
    || die "the interop scripts need Python >= 3.11 (asyncio.timeout), '$python' is $("$python" -V 2>&1)"

# One virtualenv per requirements file: tests/.venv (the a2a-sdk 1.x line) and tests/.venv03 (the
# 0.3 line, for the 0.3 HTTP+JSON tests); the two SDK lines cannot share one environment.
setup_venv() {
    local venv="$1" requirements="$2" check="$3"
    local stamp="$venv/.requirements.sha256" want
    [[ -f "$requirements" ]] || die "missing $requirements"
    if command -v sha256sum >/dev/null 2>&1; then
        want="$(sha256sum "$requirements" | cut -d' ' -f1)"
    else
        want="$(shasum -a 256 "$requirements" | cut -d' ' -f1)"
    fi
    if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
        echo "setup-python.sh: $venv is up to date"
        return 0
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
    "$venv/bin/python" -c "$check" \
        || die "the installed packages do not import; delete $venv and run again"
    echo "$want" >"$stamp"
    echo "setup-python.sh: ready ($venv)"
}

setup_venv "$venv" "$requirements" 'import a2a.client, a2a.server.routes, uvicorn'
setup_venv "$here/.venv03" "$here/python/requirements03.txt" \
    'import a2a.client.transports.rest, a2a.server.apps.rest, uvicorn'
