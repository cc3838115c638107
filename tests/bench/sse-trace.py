#!/usr/bin/env python3
"""Where in time an SSE run's slowest events fall.

Reads the files `a2a-bench --sse-trace DIR` writes (`sse-<target>-<streams>.tsv`: one line per event,
the backend's stamp and the latency, both ns; the runs of one target and stream count appended one
after another) and prints, per run: p50 / p99 / p99.9; the p99 of the middle alone (without the
first and last tenth of the run's time, where the streams are opened and closed); and how the events
slower than the run's p99 spread over its ten tenths.

    python3 tests/bench/sse-trace.py DIR
"""

import os
import sys


def quantile(sorted_values, q):
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))] / 1000


def runs_of(rows):
    """Splits one file's events into runs: a run's stamps are never a second apart."""
    runs = []
    for row in sorted(rows):
        if not runs or row[0] - runs[-1][-1][0] > 1_000_000_000:
            runs.append([])
        runs[-1].append(row)
    return runs


def describe(run):
    start, end = run[0][0], run[-1][0]
    span = max(end - start, 1)
    latencies = sorted(latency for _, latency in run)
    p99 = quantile(latencies, 0.99) * 1000
    tenths = [0] * 10
    middle = []
    for stamp, latency in run:
        tenth = min(9, (stamp - start) * 10 // span)
        if latency >= p99:
            tenths[tenth] += 1
        if 0 < tenth < 9:
            middle.append(latency)
    middle.sort()
    return (
        f"{len(run):6} events  p50 {quantile(latencies, 0.5):7.0f}  p99 {quantile(latencies, 0.99):7.0f}"
        f"  p99.9 {quantile(latencies, 0.999):7.0f} µs  middle p99 {quantile(middle, 0.99):7.0f} µs"
        f"  ≥p99 by tenth {tenths}"
    )


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    directory = sys.argv[1]
    for name in sorted(os.listdir(directory)):
        if not (name.startswith("sse-") and name.endswith(".tsv")):
            continue
        with open(os.path.join(directory, name)) as file:
            rows = [tuple(map(int, line.split())) for line in file if line.strip()]
        print(name)
        for run in runs_of(rows):
            print("  " + describe(run))


if __name__ == "__main__":
    main()
