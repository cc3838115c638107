#!/usr/bin/env bash
# Side by side: the gateway built from a base commit (or a given binary) against the working tree's,
# closed-loop saturation (`a2a-bench --only saturation`), the two alternated ROUNDS times in the same
# minutes so the machine's drift lands on both; prints the medians and the ratio new/base. Every
# optimisation's commit message quotes this table.
#
#   tests/bench/compare.sh <base commit | base binary> [rounds (default 4)] [-- extra a2a-bench args]
#
# A commit is built once into target/bench/base/<sha> (release, in a temporary worktree sharing no
# state with this one); the working tree's gateway and the bench are built with `cargo build --release`
# (NEW_BIN=<binary> compares that binary instead of the working tree's).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
base=${1:?usage: compare.sh <base commit | base binary> [rounds] [-- a2a-bench args]}
shift
rounds=4
if [[ $# -gt 0 && $1 != -- ]]; then rounds=$1; shift; fi
[[ ${1:-} == -- ]] && shift
extra=("$@")

if [[ -n ${NEW_BIN:-} ]]; then
    cargo build --release --locked -p a2a-bench --bin a2a-bench >&2
    new_bin=$(realpath "$NEW_BIN")
else
    cargo build --release --locked -p a2a-gateway -p a2a-bench --bin a2a-gateway --bin a2a-bench >&2
    new_bin=$root/target/release/a2a-gateway
fi

if [[ -x $base && -f $base ]]; then
    base_bin=$(realpath "$base")
    base_name=$base
else
    sha=$(git rev-parse --verify "$base^{commit}")
    base_name=${sha:0:12}
    base_bin=$root/target/bench/base/$sha/a2a-gateway
    if [[ ! -x $base_bin ]]; then
        tree=$(mktemp -d "${TMPDIR:-/tmp}/a2a-base-XXXXXX")
        trap 'git -C "$root" worktree remove --force "$tree" >/dev/null 2>&1 || true' EXIT
        git worktree add --detach "$tree" "$sha" >&2
        # Its own target dir: the base's crates must not overwrite the working tree's.
        CARGO_TARGET_DIR=$root/target/bench/base-target cargo build --release --locked \
            --manifest-path "$tree/Cargo.toml" -p a2a-gateway --bin a2a-gateway >&2
        mkdir -p "$(dirname "$base_bin")"
        cp "$root/target/bench/base-target/release/a2a-gateway" "$base_bin"
    fi
fi

out=$(mktemp -d "${TMPDIR:-/tmp}/a2a-compare-XXXXXX")
for round in $(seq 1 "$rounds"); do
    # Base first in odd rounds, new first in even ones: whichever side runs first in a round was
    # measured faster by ~4 % (the same two binaries, roles swapped, at 80c6418), so a fixed order
    # biases the ratio. Use an even number of rounds.
    order="base new"
    (( round % 2 == 0 )) && order="new base"
    for side in $order; do
        bin=$base_bin
        [[ $side == new ]] && bin=$new_bin
        echo "round $round/$rounds: $side ($bin)" >&2
        target/release/a2a-bench --only saturation --no-nginx --no-profile --reps 1 \
            --gateway-bin "$bin" "${extra[@]}" >"$out/$side-$round.md"
    done
done

python3 - "$out" "$rounds" "$base_name" "${NEW_BIN:-$(git describe --always --dirty)}" <<'EOF'
import re, statistics, sys
out, rounds, base_name, new_name = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
rows = {}  # path -> side -> [(req/s, cpu)]
for side in ("base", "new"):
    for r in range(1, rounds + 1):
        for line in open(f"{out}/{side}-{r}.md"):
            # | path | req/s | of direct | proxy CPU µs/req | errors |, cells "median" or "median (min–max)"
            m = re.match(r"\| (.+?) \| ([\d.]+)(?: \(.*?\))? \| [^|]+ \| ([\d.]+|–)(?: \(.*?\))? \| \d+ \|", line)
            if m:
                cpu = float(m.group(3)) if m.group(3) != "–" else None
                rows.setdefault(m.group(1), {}).setdefault(side, []).append((float(m.group(2)), cpu))
med = lambda v: statistics.median(v) if v else float("nan")
print(f"base {base_name} vs new {new_name}: closed-loop saturation, {rounds} alternated rounds; median (min-max)")
print()
print("| path | base req/s | new req/s | new/base req/s | base CPU µs/req | new CPU µs/req | new/base CPU |")
print("|---|---|---|---|---|---|---|")
for path, sides in rows.items():
    b, n = sides.get("base", []), sides.get("new", [])
    br, nr = [x[0] for x in b], [x[0] for x in n]
    bc, nc = [x[1] for x in b if x[1] is not None], [x[1] for x in n if x[1] is not None]
    rng = lambda v: f"{med(v):.0f} ({min(v):.0f}-{max(v):.0f})"
    cpu = lambda v: f"{med(v):.1f}" if v else "–"
    cpu_ratio = f"{med(nc) / med(bc):.2f}" if bc and nc else "–"
    print(f"| {path} | {rng(br)} | {rng(nr)} | {med(nr) / med(br):.2f} | {cpu(bc)} | {cpu(nc)} | {cpu_ratio} |")
EOF
rm -rf "$out"
