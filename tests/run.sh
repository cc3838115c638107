#!/usr/bin/env bash
# The whole test suite, from a fresh clone: bootstraps the Python interop environment (a2a-sdk in
# tests/.venv), then checks formatting and lints, then runs every test — unit tests and the
# end-to-end tests that start the real gateway binary and real agents on loopback.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash tests/setup-build.sh
bash tests/setup-python.sh
bash tests/setup-js.sh
bash tests/setup-redis.sh
bash tests/setup-browser.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# Every gateway the tests start runs a worker thread per core (what it picks on more than one CPU),
# named so, whatever CPUs this machine has.
A2A_RUNTIME=per_core cargo test --workspace --locked
# The end-to-end tests once more with every gateway on the current-thread scheduler, which the
# gateway picks when it may use one CPU (a container limited to one, or a process pinned to one).
A2A_RUNTIME=current_thread cargo test --locked -p a2a-gateway --test e2e
