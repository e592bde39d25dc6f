#!/usr/bin/env bash
# bench/profile.sh — profile snigate under the splice connection rate (1),
# bridge handshakes (3, full and resumed) and idle tunnels (5). It runs
# bench/run.sh with PROFILE=1 (snigate as bench/snigate-pprof, which serves
# net/http/pprof and expvar on loopback) against snigate and HAProxy, then
# prints the top CPU and allocation costs and the goroutines of an idle
# tunnel.
#
#   bench/profile.sh                 # ~2 minutes
#   IDLE_COUNTS=2000 bench/profile.sh
set -euo pipefail
cd "$(dirname "$0")/.."

before=$(ls -d bench/out/profile-* 2>/dev/null | tail -1 || true)
PROFILE=1 DNS=0 ROUNDS=${ROUNDS:-1} TARGETS=${TARGETS:-snigate,haproxy} \
	SCENARIOS=${SCENARIOS:-splice-rate,bridge-full,bridge-resumed,idle-mem} \
	IDLE_COUNTS=${IDLE_COUNTS:-${IDLE_CONNS:-5000}} bench/run.sh
dir=$(ls -d bench/out/profile-* | tail -1)
[ "$dir" != "$before" ] || { echo "profile.sh: no new profile directory" >&2; exit 1; }

top() { go tool pprof -top -nodecount="${NODES:-25}" "$@" 2>/dev/null | sed -n '1,/^ *flat/d; p' | head -"${NODES:-25}"; }
for cpu in "$dir"/*.cpu.pprof; do
	name=$(basename "$cpu" .cpu.pprof)
	echo "== $name: CPU (flat)"
	top "$cpu"
	echo "== $name: CPU (cumulative)"
	top -cum "$cpu"
	if [ -f "$dir/$name.allocs.pprof" ]; then
		echo "== $name: allocations during the measurement (objects)"
		top -sample_index=alloc_objects -base "$dir/$name.allocs-before.pprof" "$dir/$name.allocs.pprof"
		echo "== $name: allocations during the measurement (bytes)"
		top -sample_index=alloc_space -base "$dir/$name.allocs-before.pprof" "$dir/$name.allocs.pprof"
	fi
done
for g in "$dir"/*.goroutines.txt; do
	[ -f "$g" ] || continue
	echo "== $(basename "$g"): goroutines with idle tunnels open (largest groups)"
	head -1 "$g"
	awk 'BEGIN { RS = "" } $1 + 0 >= 100 { print; print "" }' "$g" | cut -c1-160 | head -80
done
for h in "$dir"/*.heap.pprof; do
	[ -f "$h" ] || continue
	echo "== $(basename "$h"): in-use heap with idle tunnels open"
	top -sample_index=inuse_space "$h"
done
echo "profiles: $dir"
