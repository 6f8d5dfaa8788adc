#!/usr/bin/env bash
# probe-accuracy.sh - how far the probe's app-level phase times are from the
# wire's, measured by its own capture: the lab at RTT 40 ms, the built-in
# server, 20 runs of a 20 kB TLS 1.3 response, median |app − wire| per
# phase (issue 4: within 1 ms). Needs root (the lab), like the lab tests.
#
# It runs the integration test that asserts this
# (crates/rttlens-lab/tests/probe.rs, app_and_wire_agree_within_1ms) in a
# release build and prints the figures it measured.
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd -- "$SCRIPT_DIR/.." && pwd)
cd "$ROOT"

if [ "$(id -u)" != 0 ]; then
    echo "probe-accuracy.sh: the lab needs root (network namespaces, /dev/net/tun)" >&2
    exit 1
fi

out=$(cargo test --release -q -p rttlens-lab --test probe app_and_wire_agree_within_1ms \
    -- --exact --nocapture 2>&1) || { printf '%s\n' "$out" >&2; exit 1; }
printf '%s\n' "$out" | grep -E '^(app − wire|capture start)' || {
    printf '%s\n' "$out" >&2
    echo "probe-accuracy.sh: the test printed no figures" >&2
    exit 1
}
