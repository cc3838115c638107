#!/usr/bin/env bash
# Instructions (callgrind Ir, every thread of the gateway, user space) per unary SendMessage through
# the gateway with no policies, in front of the bench backend. Deterministic where wall-clock CPU time
# is not: it does not move with other work on the machine, so it compares two builds on a busy host.
# Kernel time (system calls, wake-ups) is not in it; `compare.sh` measures that side. The second
# figure leaves out the runtimes' idle steps (parking), whose count follows timing, not work.
#
#   tests/bench/ir-per-request.sh <gateway binary> [<second gateway binary>] [requests (default 2000)]
#   IR_SCENARIO=full-stack tests/bench/ir-per-request.sh ...   (the full-stack scenario instead:
#                          configs/full-stack.yaml, its token and body; the audit log goes to a scratch dir.
#                          Under valgrind the CPU's SHA extensions are hidden, so the audit chain's
#                          SHA-256 runs in software: ~134k of its ~280k instructions per request, where
#                          `perf` on the CPU itself puts the hashing at ~3 % of the full stack's time)
#   IR_SCENARIO=stream tests/bench/ir-per-request.sh ...   (streams instead: each request a
#                          SendStreamingMessage of 20 events 1 ms apart; prints Ir per event, the
#                          stream's set-up spread over its events)
#   IR_SCENARIO=v03 tests/bench/ir-per-request.sh ...   (a 0.3 caller's message/send instead, no
#                          A2A-Version header: the gateway bridges it to the 1.0 bench backend and back)
#   IR_EVENTS=<n>        (the stream scenario's events per stream, 20 by default)
#   IR_KEEP=<dir> tests/bench/ir-per-request.sh ...   (keeps each binary's callgrind output there, as
#                          <dir>/<n>.callgrind, for callgrind_annotate --tree=caller and the like)
#
# Needs valgrind (Debian's package) and target/release/a2a-bench
# (`cargo build --release -p a2a-bench`). Sends `requests` sequential requests on one keep-alive
# connection after 300 of warm-up, zeroing the counts in between (callgrind_control).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
bins=()
requests=2000
for arg in "$@"; do
    if [[ -x $arg && -f $arg ]]; then bins+=("$(realpath "$arg")"); else requests=$arg; fi
done
[[ ${#bins[@]} -ge 1 ]] || { echo "usage: $0 <gateway binary> [<gateway binary>] [requests]" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }

# shellcheck source=tests/bench/lib.sh
source "$root/tests/bench/lib.sh"
bench_scratch a2a-ir
bench_backend

client=$root/tests/bench/send-messages.py

scenario=${IR_SCENARIO:-plain}
client_args=()
if [[ $scenario == full-stack ]]; then
    configs=$root/tests/bench/configs
    client_args=(--body-file "$configs/full-stack.body.json" --token-file "$configs/full-stack.token")
    export BENCH_BACKEND_URL=$backend BENCH_WORK_DIR=$work BENCH_CONFIG_DIR=$configs
elif [[ $scenario == stream ]]; then
    events=${IR_EVENTS:-20}
    client_args=(--stream "$events")
elif [[ $scenario == v03 ]]; then
    client_args=(--body-file "$root/tests/bench/configs/v03.body.json" --a2a-version "")
fi

for bin in "${bins[@]}"; do
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    if [[ $scenario == full-stack ]]; then
        sed "s/public: 127.0.0.1:0/public: 127.0.0.1:$port/" "$configs/full-stack.yaml" >"$work/gateway.yaml"
    else
        printf '%s\n' "listeners: {public: 127.0.0.1:$port, admin: null}" "health: {interval: 30s}" \
            "routing: {default_skill: bench}" "backends: [{name: bench, url: \"$backend\"}]" >"$work/gateway.yaml"
    fi
    rm -f "$work"/cg.out*
    valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$bin" serve --config "$work/gateway.yaml" \
        >"$work/gateway.log" 2>&1 &
    gateway=$!
    pids+=("$gateway")
    for _ in $(seq 200); do
        curl -sf -o /dev/null "http://127.0.0.1:$port/.well-known/agent-card.json" && break
        sleep 0.3
    done
    python3 "$client" "$port" 300 "${client_args[@]}"
    callgrind_control -z "$gateway" >/dev/null 2>&1
    python3 "$client" "$port" "$requests" "${client_args[@]}"
    callgrind_control -d "$gateway" >/dev/null 2>&1
    kill -TERM "$gateway"
    wait "$gateway" 2>/dev/null || true
    out=$(ls "$work"/cg.out.* | sort | head -1)
    total=$(callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}')
    # What the runtimes spend going idle (epoll and the timer wheel, inclusive) depends on whether
    # the next bytes were already there when a worker looked: timing, not work. Shown apart, so that
    # two builds are compared on the rest (a few hundred instructions per request move with it).
    idle=$(callgrind_annotate --inclusive=yes "$out" 2>/dev/null \
        | awk '/scheduler::current_thread::Context::park \[|scheduler::multi_thread::worker::Context::park \[/ {gsub(",", "", $1); sum += $1} END {print sum + 0}')
    if [[ $scenario == stream ]]; then
        n=$((requests * events))
        echo "$bin: $((total / n)) Ir per event, $(((total - idle) / n)) without going idle ($requests streams of $events events)"
    else
        echo "$bin: $((total / requests)) Ir per request, $(((total - idle) / requests)) without going idle ($requests requests, $scenario)"
    fi
    if [[ -n ${IR_KEEP:-} ]]; then
        mkdir -p "$IR_KEEP"
        kept=$IR_KEEP/$((${kept_count:-0} + 1)).callgrind
        kept_count=$((${kept_count:-0} + 1))
        cp "$(ls "$work"/cg.out.* | sort | head -1)" "$kept"
        echo "  callgrind output: $kept"
    fi
done
