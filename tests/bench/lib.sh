# Sourced by the bench's shell scripts (after `root` is set to the repository): a scratch directory
# removed on exit together with the processes started into `pids`, and the bench backend.

# bench_scratch <prefix>: sets `work` and `pids`, and the EXIT trap that cleans both up.
bench_scratch() {
    work=$(mktemp -d "${TMPDIR:-/tmp}/$1-XXXXXX")
    pids=()
    trap 'for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"' EXIT
}

# bench_backend: starts target/release/a2a-bench's backend; sets `backend` to its URL.
bench_backend() {
    "$root/target/release/a2a-bench" backend >"$work/backend.out" 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do grep -q '^listening' "$work/backend.out" && break; sleep 0.1; done
    backend=$(sed -n 's/^listening //p' "$work/backend.out")
}
