#!/usr/bin/env bash
# Builds the gateway as it is meant to run in production: the release profile with profile-guided
# optimisation (PGO). The profile comes from a training run of an instrumented build in front of the
# bench backend: the benchmark's scenarios (saturation with and without policies, event streams, the
# card) and then every caller binding and dialect (tests/bench/pgo-train.py: JSON-RPC, HTTP+JSON and
# gRPC; 1.0 and 0.3; refused requests), so the compiler lays out the whole public surface for speed,
# not one benchmark call.
#
#   bash deploy/build-optimized.sh [cargo build options, e.g. --features demo]
#
# Writes target/optimized/a2a-gateway. Takes ~15 minutes on 2 cores (two full builds). What it buys
# is in BENCHMARKS.md (finding 30): ~0.8x the CPU per plain call of `cargo build --release`. (One
# codegen unit with whole-program LTO was tried under it and lost: 0.94x instead of 0.82x.)
# Needs rustup (it adds the `llvm-tools` component, whose llvm-profdata matches rustc's LLVM) and
# python3 (tests/setup-python.sh makes tests/.venv for the training client). Everything it starts
# listens on 127.0.0.1 and is stopped by PID when it ends.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
features=("$@")

say() { echo "build-optimized: $*" >&2; }
die() { say "error: $*"; exit 1; }

host=$(rustc -vV | sed -n 's/^host: //p')
profdata_tool=$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata
if [[ ! -x $profdata_tool ]]; then
    command -v rustup >/dev/null || die "llvm-profdata is missing and there is no rustup to add llvm-tools"
    say "adding rustup's llvm-tools component (llvm-profdata)"
    rustup component add llvm-tools >&2
fi
[[ -x $profdata_tool ]] || die "no llvm-profdata at $profdata_tool"
bash tests/setup-python.sh >/dev/null

# shellcheck source=tests/bench/lib.sh
source tests/bench/lib.sh
bench_scratch a2a-pgo

# 1. The instrumented build, in a target directory of its own (its flags differ from every other build's;
#    a constant profile directory keeps it incremental between runs).
instrumented=$root/target/pgo-instrumented
raw=$instrumented/profraw
say "building the instrumented gateway"
CARGO_TARGET_DIR=$instrumented RUSTFLAGS="-Cprofile-generate=$raw" \
    cargo build --release --locked -p a2a-gateway ${features[@]+"${features[@]}"} >&2
cargo build --release --locked -p a2a-bench --bin a2a-bench >&2
gateway=$instrumented/release/a2a-gateway

# The profile is named by what made it (the instrumented binary; the benchmark's sources, the
# training client and this script): the same inputs train to the same profile, so it is reused (and
# the optimized build stays cached); new inputs give a new name, new flags, and a rebuild.
digest=$(cat "$gateway" tests/bench/pgo-train.py "${BASH_SOURCE[0]}" $(find tests/bench/src -name '*.rs' | sort) \
    | sha256sum | cut -c1-16)
profile=$root/target/pgo/gateway-$digest.profdata
if [[ -f $profile ]]; then
    say "reusing $profile (its inputs are unchanged)"
else
    rm -rf "$raw"
    # 2. Training. Each gateway writes its counts when it exits (SIGTERM: a clean exit).
    # Both schedulers: a worker thread per core (more than one CPU) and the current-thread one (a
    # single CPU, as when pinned to one core).
    for runtime in per_core current_thread; do
        say "training: the benchmark's scenarios ($runtime)"
        target/release/a2a-bench --gateway-bin "$gateway" --gateway-env "A2A_RUNTIME=$runtime" \
            --only saturation,sse,card --reps 1 --no-nginx --out "$work/bench.md" >"$work/bench.log" 2>&1 \
            || { cat "$work/bench.log" >&2; die "the benchmark's training run failed"; }
    done

    say "training: every caller binding and dialect"
    bench_backend
    [[ -n $backend ]] || die "the bench backend did not start"
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    printf '%s\n' "listeners: {public: 127.0.0.1:$port, admin: null}" "health: {interval: 30s}" \
        "routing: {default_skill: bench}" "backends: [{name: bench, url: \"$backend\"}]" >"$work/gateway.yaml"
    "$gateway" serve --config "$work/gateway.yaml" >"$work/gateway.log" 2>&1 &
    gateway_pid=$!
    pids+=("$gateway_pid")
    for _ in $(seq 100); do grep -q 'listening' "$work/gateway.log" && break; sleep 0.1; done
    tests/.venv/bin/python tests/bench/pgo-train.py "$port" --rounds 300 >&2
    kill -TERM "$gateway_pid"
    wait "$gateway_pid" || true

    # 3. The profile.
    files=("$raw"/*.profraw)
    [[ -f ${files[0]} ]] || die "the training wrote no profile (did the gateways exit cleanly?)"
    mkdir -p "$root/target/pgo"
    find "$root/target/pgo" -maxdepth 1 -name 'gateway-*.profdata' -delete
    "$profdata_tool" merge -o "$profile" "$raw"
fi

# 4. The optimized build.
say "building the optimized gateway (PGO)"
CARGO_TARGET_DIR=$root/target/pgo RUSTFLAGS="-Cprofile-use=$profile" \
    cargo build --release --locked -p a2a-gateway ${features[@]+"${features[@]}"} >&2
mkdir -p target/optimized
cp target/pgo/release/a2a-gateway target/optimized/a2a-gateway
say "wrote target/optimized/a2a-gateway"
