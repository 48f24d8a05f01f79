#!/usr/bin/env bash
# The README's test command on a fresh clone of this repository's HEAD, timed: the proof that
# the suite passes within its time on a loaded machine (issue 48).
#
#   bash scripts/test-fresh.sh --busy 1   # one busy loop keeps one core busy meanwhile
#   bash scripts/test-fresh.sh            # an idle machine
#
# Prints the commit, the load, the clone and the time taken; exits with the test command's status.
# Extra arguments after the options go to pytest.
set -euo pipefail
busy=0
if [ "${1:-}" = "--busy" ]; then busy=$2; shift 2; fi
repo=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d)
chmod 755 "$scratch"  # an unprivileged user may enter it (test_os_confined's check run as nobody)
clone=$scratch/larik_jupyter
git clone -q "$repo" "$clone"
pids=()
stop_busy() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap stop_busy EXIT
for _ in $(seq 1 "$busy"); do python3 -c "while True: pass" & pids+=($!); done
echo "commit $(git -C "$clone" rev-parse --short HEAD), $busy busy loop(s), clone $clone, load $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s)
status=0
(cd "$clone" && bash scripts/test.sh "$@") || status=$?
took=$(( $(date +%s) - start ))
echo "README test command: exit $status in $((took / 60)) min $((took % 60)) s (commit $(git -C "$clone" rev-parse --short HEAD), $busy busy loop(s), load at the end $(cut -d' ' -f1-3 /proc/loadavg))"
exit "$status"
