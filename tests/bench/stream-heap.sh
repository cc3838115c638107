#!/usr/bin/env bash
# Where an idle event stream's heap goes. Builds the gateway with the system allocator (feature
# `system-allocator`, with debug info, into target/heap), runs it under valgrind's dhat in front of
# the bench backend, holds STREAMS streams open (each has had its first event), stops the gateway
# and prints the allocation sites alive at the heap's peak, largest first, with bytes per stream.
# How finding 21 of BENCHMARKS.md found what an idle stream held (vendor/README.md).
#
#   tests/bench/stream-heap.sh [streams (default 500)] [--tls]   (--tls: callers over TLS, self-signed)
#
# Needs valgrind and openssl (Debian's packages) and target/release/a2a-bench
# (`cargo build --release -p a2a-bench`). Everything on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
streams=500
tls=""
for arg in "$@"; do
    case $arg in
        --tls) tls=--tls ;;
        *) streams=$arg ;;
    esac
done
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
CARGO_TARGET_DIR=$root/target/heap CARGO_PROFILE_RELEASE_DEBUG=1 \
    cargo build --release --locked -p a2a-gateway --features system-allocator
# shellcheck source=tests/bench/lib.sh
source "$root/tests/bench/lib.sh"
bench_scratch a2a-heap
bench_backend
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
tls_section=""
scheme=http
if [[ -n $tls ]]; then
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" -days 1 \
        -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 2>/dev/null
    tls_section="  tls: {cert: $work/cert.pem, key: $work/key.pem}"
    scheme=https
fi
cat >"$work/gateway.yaml" <<YAML
listeners:
  public: 127.0.0.1:$port
  admin: null
  protection: {max_connections: 100000, max_connections_per_address: null}
$tls_section
health: {interval: 30s}
routing: {default_skill: bench}
backends: [{name: bench, url: "$backend"}]
YAML
A2A_RUNTIME=current_thread valgrind --tool=dhat --dhat-out-file="$work/dhat.json" \
    "$root/target/heap/release/a2a-gateway" serve --config "$work/gateway.yaml" >"$work/gateway.log" 2>&1 &
gateway=$!
pids+=("$gateway")
for _ in $(seq 300); do grep -q "^listening $scheme" "$work/gateway.log" && break; sleep 0.2; done
sleep 2
python3 "$root/tests/bench/hold-streams.py" "$port" "$streams" 3 $tls
kill -TERM "$gateway"
wait "$gateway" 2>/dev/null || true
python3 "$root/tests/bench/dhat-top.py" "$work/dhat.json" "$streams"
