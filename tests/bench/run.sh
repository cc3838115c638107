#!/usr/bin/env bash
# Builds the gateway as it ships (deploy/build-optimized.sh: the release profile with profile-guided
# optimisation; ~15 minutes on 2 cores the first time, cached while the sources stay the same) and
# the benchmark, and runs the whole benchmark set, which writes BENCHMARKS.md at the repository root
# (about 7 minutes after the build on 2 cores).
#
#   bash tests/bench/run.sh                   # the full set
#   bash tests/bench/run.sh --install-nginx   # the same, installing Debian's nginx first for the reference row
#   bash tests/bench/run.sh --release-build   # measure `cargo build --release`'s gateway instead
#   bash tests/bench/run.sh --smoke           # tiny counts, a few seconds, the release build; writes target/bench/smoke.md
#
# Other options go to the benchmark binary (`target/release/a2a-bench --help`).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

command_line="bash tests/bench/run.sh${*:+ $*}"
install_nginx=0
optimized=1
args=()
for arg in "$@"; do
  case "$arg" in
    --install-nginx) install_nginx=1 ;;
    --release-build) optimized=0 ;;
    --smoke | --gateway-bin | --gateway-bin=* | --render | --render=*) optimized=0; args+=("$arg") ;;
    *) args+=("$arg") ;;
  esac
done

have_nginx() { [ -x /usr/sbin/nginx ] || command -v nginx >/dev/null 2>&1; }

if [ "$install_nginx" = 1 ] && ! have_nginx; then
  echo "installing nginx from Debian's packages" >&2
  # Keep the package from starting its own nginx service: the benchmark runs its own, on loopback.
  policy=/usr/sbin/policy-rc.d
  made_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && made_policy=1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y nginx-light >&2 || { apt-get update >&2 && apt-get install -y nginx-light >&2; } \
    || apt-get install -y nginx >&2 || echo "could not install nginx: its row will be skipped" >&2
  if [ "$made_policy" = 1 ]; then rm -f "$policy"; fi
fi

# Idle streams need two descriptors each in the gateway and in the benchmark; children inherit this.
ulimit -Hn 262144 2>/dev/null || true
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

cargo build --release -p a2a-gateway -p a2a-bench >&2
if [ "$optimized" = 1 ]; then
  bash deploy/build-optimized.sh >&2
  args=(--gateway-bin "$root/target/optimized/a2a-gateway" ${args[@]+"${args[@]}"})
fi

# On shared machines, let other work yield to the benchmark (and its children) when we may.
priority=()
if nice -n -10 true 2>/dev/null; then priority=(nice -n -10); fi

exec ${priority[@]+"${priority[@]}"} target/release/a2a-bench --command-line "$command_line" ${args[@]+"${args[@]}"}
