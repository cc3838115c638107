#!/usr/bin/env bash
# Headless Chromium from Debian's packages for the status page test (tests/e2e/status_page.rs).
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y chromium; then
    apt-get update
    apt-get install -y chromium
fi
