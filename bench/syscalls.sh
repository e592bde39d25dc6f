#!/usr/bin/env bash
# bench/syscalls.sh — where each proxy's CPU goes per spliced connection,
# by system call: the evidence behind "what bounds the connection rate" in
# bench/RESULTS.md. For each target, one at a time, it runs scenario 1
# (splice-rate) through bench/run.sh, records the whole machine with
# `perf record -a -g` for PERF_TIME in the middle of the measurement, and
# splits the target's samples by the system call they were in
# (`loadgen syscalls`): microseconds of CPU per connection, user space
# apart. Connections counted = the measured rate x PERF_TIME.
#
#   bench/syscalls.sh                       # snigate, haproxy, nginx; ~1 minute
#   TARGETS=snigate,haproxy bench/syscalls.sh
#
# Needs perf (Debian: linux-perf) and root (or perf_event_paranoid <= -1
# for system-wide recording with kernel call chains).
set -euo pipefail
cd "$(dirname "$0")/.."
TARGETS=${TARGETS:-snigate,haproxy,nginx}
PERF_TIME=${PERF_TIME:-4}
command -v perf >/dev/null || { echo "syscalls.sh: perf is missing: apt-get install linux-perf" >&2; exit 1; }
work=$(mktemp -d /tmp/snigate-syscalls.XXXXXX)
trap 'rm -rf "$work"' EXIT
go build -o "$work/loadgen" ./bench/loadgen
declare -A comm=([snigate]=snigate [haproxy]=haproxy [nginx]=nginx [sniproxy]=sniproxy)
IFS=, read -ra targets <<<"$TARGETS"
echo "# CPU per spliced connection by system call ($(date -u '+%Y-%m-%d %H:%M UTC'), $(git rev-parse --short HEAD))"
for t in "${targets[@]}"; do
	[ -n "${comm[$t]:-}" ] || { echo "syscalls.sh: unknown target $t" >&2; exit 1; }
	SCENARIOS=splice-rate TARGETS="$t" ROUNDS=1 RATE_TIME=$((PERF_TIME + 8))s DNS=0 \
		bench/run.sh >"$work/$t.log" 2>&1 &
	runner=$!
	# Start recording once the measurement runs (the log says the round began
	# only when it ends, so wait for the proxy's first connections instead).
	for _ in $(seq 1 120); do
		grep -q "scenarios splice-rate" "$work/$t.log" 2>/dev/null && break
		sleep 0.5
	done
	sleep 4
	perf record -q -e cpu-clock -a -g -o "$work/$t.data" -- sleep "$PERF_TIME" >/dev/null 2>&1
	wait "$runner" || { cat "$work/$t.log" >&2; exit 1; }
	rate=$(sed -n "s/^round 1 splice-rate *$t .*conn_s=\([0-9.e+]*\).*/\1/p" "$work/$t.log")
	[ -n "$rate" ] || { echo "syscalls.sh: no rate for $t" >&2; cat "$work/$t.log" >&2; exit 1; }
	conns=$(awk -v r="$rate" -v d="$PERF_TIME" 'BEGIN { printf "%d", r * d }')
	echo
	echo "## $t: $(printf '%.0f' "$rate") conn/s, $conns connections in ${PERF_TIME}s of recording"
	echo
	perf script -i "$work/$t.data" -F comm,period,ip,sym,dso 2>/dev/null |
		"$work/loadgen" syscalls -comm "${comm[$t]}" -conns "$conns"
done
