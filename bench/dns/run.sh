#!/usr/bin/env bash
# Load run: dnsperf against snigate's DNS responder and against dnsmasq, both
# answering the same routed name with the same address, on this machine in
# this run, in interleaved rounds (snigate, dnsmasq, snigate, dnsmasq, ...).
# Prints queries/s per round, the medians and the ratio snigate/dnsmasq.
#
#   bench/dns/run.sh                 # 3 rounds of 10s each
#   ROUNDS=5 DURATION=20 bench/dns/run.sh
#   PROFILE=/tmp/cpu.pprof bench/dns/run.sh   # CPU profile of the responder
#   BEFORE=/tmp/responder-old bench/dns/run.sh # also an older responder build,
#                                             # in the same rounds (before/after)
#
# Needs: go, dnsperf, dnsmasq (Debian: dnsperf dnsmasq-base), dig (dnsutils).
# dnsperf shares the CPUs with the server under test: on a 2-core machine it
# can be the bottleneck, which the "dnsperf CPU" column helps tell.
set -euo pipefail
cd "$(dirname "$0")/../.."

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10}          # seconds per dnsperf run
CLIENTS=${CLIENTS:-4}             # dnsperf -c
OUTSTANDING=${OUTSTANDING:-100}   # dnsperf -q
NAME=registry.example.test
ANSWER=192.0.2.10
SNIGATE_PORT=${SNIGATE_PORT:-15353}
DNSMASQ_PORT=${DNSMASQ_PORT:-15354}
BEFORE_PORT=${BEFORE_PORT:-15355}
BEFORE=${BEFORE:-}
DNSPERF=${DNSPERF:-/usr/bin/dnsperf}
DNSMASQ=${DNSMASQ:-/usr/sbin/dnsmasq}

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

for tool in "$DNSPERF" "$DNSMASQ" dig go; do
	command -v "$tool" >/dev/null || { echo "run.sh: $tool not found (apt-get install dnsperf dnsmasq-base dnsutils)" >&2; exit 1; }
done

echo "building bench/dns/responder"
go build -o "$work/responder" ./bench/dns/responder
printf '%s A\n' "$NAME" >"$work/queries"

"$work/responder" -listen "127.0.0.1:$SNIGATE_PORT" -name "$NAME" -answer "$ANSWER" \
	${PROFILE:+-cpuprofile "$PROFILE"} >"$work/responder.out" &
pids+=($!)
snigate_pid=$!

if [ -n "$BEFORE" ]; then
	"$BEFORE" -listen "127.0.0.1:$BEFORE_PORT" -name "$NAME" -answer "$ANSWER" >"$work/before.out" &
	pids+=($!)
	before_pid=$!
fi

"$DNSMASQ" --no-daemon --no-resolv --no-hosts --conf-file=/dev/null --bind-interfaces \
	--port="$DNSMASQ_PORT" --listen-address=127.0.0.1 --address="/$NAME/$ANSWER" \
	--user="$(id -un)" --pid-file= 2>"$work/dnsmasq.err" &
pids+=($!)
dnsmasq_pid=$!

# wait_answer PORT: until the server there answers NAME with ANSWER (10s at most).
wait_answer() {
	for _ in $(seq 100); do
		if [ "$(dig +short +time=1 +tries=1 -p "$1" @127.0.0.1 "$NAME" A 2>/dev/null)" = "$ANSWER" ]; then
			return 0
		fi
		sleep 0.1
	done
	echo "run.sh: nothing answers $NAME with $ANSWER on port $1" >&2
	cat "$work/dnsmasq.err" >&2
	exit 1
}
wait_answer "$SNIGATE_PORT"
wait_answer "$DNSMASQ_PORT"
[ -z "$BEFORE" ] || wait_answer "$BEFORE_PORT"

# cpu_ticks PID: user+system clock ticks used so far by PID.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# perf NAME PORT PID: one dnsperf run; prints
# "qps server_cpu% server_cpu_us_per_query dnsperf_cpu% lost".
perf() {
	local before after out
	before=$(cpu_ticks "$3")
	out=$(/usr/bin/time -f 'TIME %U %S %e' "$DNSPERF" -s 127.0.0.1 -p "$2" -d "$work/queries" \
		-l "$DURATION" -c "$CLIENTS" -q "$OUTSTANDING" 2>&1)
	after=$(cpu_ticks "$3")
	awk -v ticks="$((after - before))" -v hz="$(getconf CLK_TCK)" '
		/Queries per second:/ { qps = $4 }
		/Queries lost:/ { lost = $3 }
		/^TIME/ { wall = $4; perfcpu = ($2 + $3) / wall * 100 }
		END { printf "%.0f %.0f %.1f %.0f %s\n", qps, ticks / hz / wall * 100, ticks / hz / (qps * wall) * 1e6, perfcpu, lost }' <<<"$out"
}

row() { printf '%-6s %-8s %10s %12s %14s %13s %6s\n' "$@"; }
row round server "queries/s" "server CPU%" "CPU us/query" "dnsperf CPU%" lost
snigate_qps=() dnsmasq_qps=() before_qps=() snigate_us=() dnsmasq_us=() before_us=()
for r in $(seq "$ROUNDS"); do
	read -r q s u p l < <(perf snigate "$SNIGATE_PORT" "$snigate_pid")
	row "$r" snigate "$q" "$s" "$u" "$p" "$l"
	snigate_qps+=("$q") snigate_us+=("$u")
	read -r q s u p l < <(perf dnsmasq "$DNSMASQ_PORT" "$dnsmasq_pid")
	row "$r" dnsmasq "$q" "$s" "$u" "$p" "$l"
	dnsmasq_qps+=("$q") dnsmasq_us+=("$u")
	if [ -n "$BEFORE" ]; then
		read -r q s u p l < <(perf before "$BEFORE_PORT" "$before_pid")
		row "$r" before "$q" "$s" "$u" "$p" "$l"
		before_qps+=("$q") before_us+=("$u")
	fi
done

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
s=$(median "${snigate_qps[@]}")
d=$(median "${dnsmasq_qps[@]}")
echo
echo "median queries/s: snigate $s, dnsmasq $d, ratio snigate/dnsmasq $(awk -v s="$s" -v d="$d" 'BEGIN { printf "%.2f", s / d }')"
echo "median server CPU per query: snigate $(median "${snigate_us[@]}") us, dnsmasq $(median "${dnsmasq_us[@]}") us"
if [ -n "$BEFORE" ]; then
	b=$(median "${before_qps[@]}")
	echo "median queries/s of BEFORE: $b, ratio before/dnsmasq $(awk -v b="$b" -v d="$d" 'BEGIN { printf "%.2f", b / d }'), CPU per query $(median "${before_us[@]}") us"
fi
echo "($(nproc) CPUs; dnsperf -c $CLIENTS -q $OUTSTANDING -l $DURATION; load average $(cut -d' ' -f1-3 /proc/loadavg))"
