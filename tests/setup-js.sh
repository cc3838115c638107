#!/usr/bin/env bash
# Installs the JavaScript interop dependency (@a2a-js/sdk, pinned in tests/js/package.json and
# package-lock.json) into tests/js/node_modules with npm. Idempotent: a stamp holding the hash of the
# lock file makes a second run with an unchanged lock a no-op (no network).
#
# Usage: tests/setup-js.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="$here/js"
stamp="$dir/node_modules/.lock.sha256"

die() {
    echo "setup-js.sh: error: $*" >&2
    exit 1
}

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1 && [[ "$(id -u)" == 0 ]]; then
        echo "setup-js.sh: installing nodejs and npm"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null \
            || die "apt-get install nodejs npm failed"
    else
        die "node and npm are needed (Node.js >= 18); install them"
    fi
fi
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)' \
    || die "the JS interop client needs Node.js >= 18 (fetch), this is $(node --version)"

want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "setup-js.sh: $dir/node_modules is up to date"
    exit 0
fi
echo "setup-js.sh: installing $dir/package-lock.json"
(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) || die "npm ci failed (network? see above)"
(cd "$dir" && node -e 'import("@a2a-js/sdk/client")') || die "@a2a-js/sdk does not import; delete $dir/node_modules and run again"
echo "$want" >"$stamp"
echo "setup-js.sh: ready ($dir/node_modules)"
