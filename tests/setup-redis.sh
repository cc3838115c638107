#!/usr/bin/env bash
# Makes sure Debian's redis-server is installed: the end-to-end tests of shared state start their
# own redis-server processes (loopback, free port, temporary data dir). No-op when present.
set -euo pipefail

if command -v redis-server >/dev/null 2>&1; then
    exit 0
fi
sudo=""
if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null 2>&1 || { echo "setup-redis.sh: error: redis-server is missing and neither root nor sudo is available; install the 'redis-server' package" >&2; exit 1; }
    sudo="sudo"
fi
if ! $sudo apt-get install -y --no-install-recommends redis-server; then
    $sudo apt-get update
    $sudo apt-get install -y --no-install-recommends redis-server
fi
command -v redis-server >/dev/null 2>&1 || { echo "setup-redis.sh: error: redis-server still not found after installing" >&2; exit 1; }
