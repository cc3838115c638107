#!/usr/bin/env bash
# What terminating TLS costs the gateway per request, side by side with plain HTTP: the gateway's
# own CPU time (user + system, from /proc/<pid>/stat) over a fixed number of unary SendMessage calls
# through the gateway with no policies, in front of the bench backend.
#
#   tests/bench/tls-cost.sh [gateway binary (default target/release/a2a-gateway)] [requests (default 3000)]
#
# Three rows, each run after a warm-up on the same gateway process pair (one plain, one with
# listeners.tls), 8 client connections at a time:
#   plain HTTP, keep-alive           the baseline
#   TLS 1.3, keep-alive              TLS record cost only (handshake excluded)
#   TLS 1.3, one connection each     a full handshake (ECDSA P-256 certificate) per request
# The clients are Python (stdlib ssl/socket) on the same machine: they set the pace, not the
# gateway, so this is the cost per request at moderate load, not at saturation. CPU time is read in
# clock ticks (10 ms): a few thousand requests keep the rounding within a few per cent. Needs openssl,
# python3 and target/release/a2a-bench (`cargo build --release -p a2a-bench`). Prints a Markdown
# table.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
bin=$(realpath "${1:-target/release/a2a-gateway}")
requests=${2:-3000}

work=$(mktemp -d "${TMPDIR:-/tmp}/a2a-tls-cost-XXXXXX")
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

# A CA and the gateway's certificate for 127.0.0.1, made here (nothing secret is kept).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/ca.key" \
    -out "$work/ca.crt" -subj /CN=bench-ca -days 1 \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/gw.key" \
    -out "$work/gw.csr" -subj /CN=127.0.0.1 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$work/gw.ext"
openssl x509 -req -in "$work/gw.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial \
    -out "$work/gw.crt" -days 1 -extfile "$work/gw.ext" 2>/dev/null

"$root/target/release/a2a-bench" backend >"$work/backend.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q '^listening' "$work/backend.out" && break; sleep 0.1; done
backend=$(sed -n 's/^listening //p' "$work/backend.out")

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_gateway NAME TLS_YAML: starts it, sets $gateway_pid and $gateway_port.
start_gateway() {
    local name=$1 tls=$2
    gateway_port=$(free_port)
    cat >"$work/$name.yaml" <<EOF
listeners:
  public: 127.0.0.1:$gateway_port
  admin: null
$tls
health: {interval: 30s}
routing: {default_skill: bench}
backends: [{name: bench, url: "$backend"}]
EOF
    "$bin" serve --config "$work/$name.yaml" >"$work/$name.log" 2>&1 &
    gateway_pid=$!
    pids+=("$gateway_pid")
    for _ in $(seq 100); do grep -q 'listening' "$work/$name.log" && return; sleep 0.1; done
    echo "the $name gateway did not start; see $work/$name.log" >&2
    exit 1
}

client=$root/tests/bench/send-messages.py

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
ticks_per_second=$(getconf CLK_TCK)

# measure PID PORT MODE → CPU µs per request of the gateway PID.
measure() {
    local pid=$1 port=$2 mode=$3 before after
    python3 "$client" "$port" 400 --connections 8 --mode "$mode" --ca "$work/ca.crt"
    before=$(cpu_ticks "$pid")
    python3 "$client" "$port" "$requests" --connections 8 --mode "$mode" --ca "$work/ca.crt"
    after=$(cpu_ticks "$pid")
    python3 -c "print(f'{($after - $before) / $ticks_per_second / ($requests // 8 * 8) * 1e6:.1f}')"
}

start_gateway plain ""
plain_pid=$gateway_pid plain_port=$gateway_port
start_gateway tls "  tls: {cert: $work/gw.crt, key: $work/gw.key, admin: false}"
tls_pid=$gateway_pid tls_port=$gateway_port

plain=$(measure "$plain_pid" "$plain_port" plain)
tls=$(measure "$tls_pid" "$tls_port" tls)
handshake=$(measure "$tls_pid" "$tls_port" handshake)
echo "| gateway, no policies, $requests unary SendMessage, 8 connections | gateway CPU µs per request |"
echo "|---|---|"
echo "| plain HTTP/1.1, keep-alive | $plain |"
echo "| TLS 1.3, keep-alive (handshake excluded) | $tls |"
echo "| TLS 1.3, a new connection per request (handshake included) | $handshake |"
