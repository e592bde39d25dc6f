#!/usr/bin/env bash
# sni/pgo.sh — regenerate cmd/snigate/default.pgo, the profile that
# `go build ./cmd/snigate` uses for profile-guided optimisation (-pgo=auto).
# It profiles snigate (bench/profile.sh: snigate-pprof, no PGO, GOMAXPROCS=2)
# under the bench scenarios splice-rate, bridge-full and bridge-resumed,
# 10 s each, and merges the three CPU profiles. Run it on a quiet machine
# after hot-path changes; keep the file small (about 50 KiB).
#
#   sni/pgo.sh
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=snigate SCENARIOS=splice-rate,bridge-full,bridge-resumed \
	RATE_TIME=${RATE_TIME:-10s} HS_TIME=${HS_TIME:-10s} IDLE_CONNS=100 \
	bench/profile.sh >/dev/null
dir=$(ls -d bench/out/profile-* | tail -1)
go tool pprof -proto "$dir/splice-rate-r1.cpu.pprof" "$dir/bridge-full-r1.cpu.pprof" \
	"$dir/bridge-resumed-r1.cpu.pprof" >cmd/snigate/default.pgo
ls -l cmd/snigate/default.pgo
echo "pgo.sh: merged $dir/{splice-rate,bridge-full,bridge-resumed}-r1.cpu.pprof"
