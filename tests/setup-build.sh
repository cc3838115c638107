#!/usr/bin/env bash
# Makes sure the native build tools exist: the gateway links jemalloc, which tikv-jemalloc-sys builds
# from source with make and a C compiler (ring needs the compiler too). No-op when present; else
# installs Debian's packages.
set -euo pipefail

missing=()
command -v make >/dev/null 2>&1 || missing+=(make)
command -v cc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
if [[ ${#missing[@]} == 0 ]]; then
    exit 0
fi
sudo=""
if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null 2>&1 || { echo "setup-build.sh: error: ${missing[*]} missing and neither root nor sudo is available" >&2; exit 1; }
    sudo="sudo"
fi
if ! $sudo apt-get install -y --no-install-recommends "${missing[@]}"; then
    $sudo apt-get update
    $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi
command -v make >/dev/null 2>&1 || { echo "setup-build.sh: error: make still not found after installing" >&2; exit 1; }
