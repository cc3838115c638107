#!/usr/bin/env bash
# The release check: the official A2A conformance kit (a2aproject/a2a-tck, pinned; not on PyPI) run
# against its own SDK agent (the kit's SUT executor on a2a-sdk 1.3.0, serving JSON-RPC, HTTP+JSON and
# gRPC) directly, and through the gateway at the agent's path (/agents/sut) and at the root; prints
# the tallies side by side (all transports, and gRPC alone) and every test that passes direct but not
# through the gateway. Exit status 0 only when the gateway passes every test the agent passes direct.
#
# Usage: tests/conformance.sh [--keep]        (--keep: leave the work directory for inspection)
# Env:   A2A_TCK_DIR   directory holding a2a-tck-*-src.tar.gz and sut_agent_sdk13.py
#                      (default: the first of ../shared/conformance, ../../shared/conformance)
#        CARGO_PROFILE debug (default) or release
#
# Needs: tests/.venv (bash tests/setup-python.sh: the SUT runs on its a2a-sdk 1.3.0), network for the
# kit's own Python dependencies on the first run (cached in tests/.tck afterwards). Everything binds
# 127.0.0.1. Takes a few minutes: three full runs of the kit.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
keep=false
[[ "${1:-}" == "--keep" ]] && keep=true

die() {
    echo "conformance.sh: error: $*" >&2
    exit 1
}

kit_dir="${A2A_TCK_DIR:-}"
if [[ -z "$kit_dir" ]]; then
    for candidate in "$repo/../shared/conformance" "$repo/../../shared/conformance"; do
        [[ -d "$candidate" ]] && kit_dir="$(cd "$candidate" && pwd)" && break
    done
fi
[[ -n "$kit_dir" && -d "$kit_dir" ]] || die "the kit is not found; set A2A_TCK_DIR to the directory holding a2a-tck-*-src.tar.gz"
archive="$(ls "$kit_dir"/a2a-tck-*-src.tar.gz 2>/dev/null | head -n1)"
[[ -f "$archive" ]] || die "no a2a-tck-*-src.tar.gz in $kit_dir"
sut_script="$kit_dir/sut_agent_sdk13.py"
[[ -f "$sut_script" ]] || die "no sut_agent_sdk13.py in $kit_dir"

bash "$here/setup-python.sh" >/dev/null
python13="$here/.venv/bin/python"

# The kit, unpacked and installed once per archive (a stamp holds the archive's hash).
tck="$here/.tck"
stamp="$tck/.archive.sha256"
want="$(sha256sum "$archive" | cut -d' ' -f1)"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" || ! -x "$tck/.venv/bin/python" ]]; then
    echo "conformance.sh: installing the kit from $archive"
    rm -rf "$tck"
    mkdir -p "$tck/src"
    tar -xzf "$archive" -C "$tck/src"
    python3 -m venv "$tck/.venv"
    "$tck/.venv/bin/python" -m pip install --disable-pip-version-check --quiet -e "$tck/src" \
        || die "pip install of the kit failed"
    echo "$want" >"$stamp"
fi

profile="${CARGO_PROFILE:-debug}"
cargo_flags=(-p a2a-gateway --bin a2a-gateway --locked)
[[ "$profile" == "release" ]] && cargo_flags+=(--release)
(cd "$repo" && cargo build "${cargo_flags[@]}" >/dev/null 2>&1) || die "cargo build failed (run it to see why)"
gateway_bin="$repo/target/$profile/a2a-gateway"

work="$(mktemp -d "${TMPDIR:-/tmp}/a2a-conformance.XXXXXX")"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    if $keep; then echo "conformance.sh: work directory kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

free_port() {
    "$python13" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_for() {
    local url="$1" what="$2"
    for _ in $(seq 1 150); do
        if curl -fsS -o /dev/null "$url" 2>/dev/null; then return 0; fi
        sleep 0.2
    done
    die "$what did not come up ($url); see $work"
}

sut_port="$(free_port)"
grpc_port="$(free_port)"
SUT_HOST="127.0.0.1:$sut_port" GRPC_PORT="$grpc_port" TCK_SUT_SOURCE="$tck/src/sut/a2a-python/sut_agent.py" \
    "$python13" "$sut_script" >"$work/sut.log" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$sut_port/.well-known/agent-card.json" "the SUT agent"

gw_port="$(free_port)"
admin_port="$(free_port)"
cat >"$work/gateway.yaml" <<EOF
listeners:
  public: 127.0.0.1:$gw_port
  admin: 127.0.0.1:$admin_port
health:
  interval: 500ms
routing:
  default_skill: tck
card:
  # The SUT serves no 0.3 and the kit fetches cards without A2A-Version: the strict 1.0 card for
  # every fetch, as a gateway for a fleet without 0.3-only clients would be set (README, "A2A
  # dialects"). With the default ("0.3") the card adds the 0.3 top-level fields and loses
  # CARD-STRUCT-001 by design, as a reference SDK server with 0.3 support does.
  unversioned_fetch: "1.0"
backends:
  - name: sut
    url: http://127.0.0.1:$sut_port
EOF
"$gateway_bin" serve --config "$work/gateway.yaml" >"$work/gateway.log" 2>&1 &
pids+=($!)
gateway="http://127.0.0.1:$gw_port"
for _ in $(seq 1 150); do
    curl -fsS "$gateway/agents/sut/.well-known/agent-card.json" 2>/dev/null | grep -q '"tck"' && break
    sleep 0.2
done

run_kit() {
    local name="$1" host="$2"
    echo "conformance.sh: running the kit $name ($host)"
    (cd "$tck/src" && "$tck/.venv/bin/python" -m pytest tests/compatibility/ -p no:cacheprovider -q \
        --sut-host="$host" --junitxml="$work/$name.xml" >"$work/$name.txt" 2>&1) || true
}

run_kit direct "http://127.0.0.1:$sut_port"
run_kit agent-path "$gateway/agents/sut"
run_kit root "$gateway"

"$python13" - "$work" <<'EOF'
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

work = Path(sys.argv[1])
runs = ['direct', 'agent-path', 'root']


def outcomes(name):
    out = {}
    for case in ET.parse(work / f'{name}.xml').iter('testcase'):
        key = f"{case.get('classname')}::{case.get('name')}"
        if case.find('failure') is not None or case.find('error') is not None:
            out[key] = 'failed'
        elif case.find('skipped') is not None:
            out[key] = 'skipped'
        else:
            out[key] = 'passed'
    return out


results = {name: outcomes(name) for name in runs}


def tally(result, only_grpc=False):
    counts = {'passed': 0, 'failed': 0, 'skipped': 0}
    for key, outcome in result.items():
        if not only_grpc or 'grpc' in key.lower():
            counts[outcome] += 1
    return counts


print(f"\n{'':12}" + ''.join(f'{name:>24}' for name in runs))
for label, only_grpc in (('all', False), ('gRPC', True)):
    cells = []
    for name in runs:
        t = tally(results[name], only_grpc)
        cells.append(f"{t['passed']:>6} P {t['failed']:>4} F {t['skipped']:>4} S")
    print(f'{label:12}' + ''.join(f'{c:>24}' for c in cells))

# Deliberate differences, each with its reason (README, "A2A dialects"): not counted as regressions.
EXPECTED = {}

regressions = 0
for name in runs[1:]:
    lost = sorted(k for k, v in results['direct'].items() if v == 'passed' and results[name].get(k) != 'passed')
    unexpected = [k for k in lost if k not in EXPECTED]
    regressions += len(unexpected)
    print(f'\npassed direct, not through the gateway ({name}): {len(lost)}, {len(unexpected)} unexpected')
    for key in lost:
        why = EXPECTED.get(key)
        print(f'  {key}  [{results[name].get(key, "missing")}]' + (f'\n      deliberate: {why}' if why else ''))
    gained = sorted(k for k, v in results[name].items() if v == 'passed' and results['direct'].get(k) != 'passed')
    print(f'passed through the gateway ({name}), not direct: {len(gained)}')
    for key in gained:
        print(f'  {key}')
sys.exit(1 if regressions else 0)
EOF
