#!/usr/bin/env bash
# Runs `make test` on fresh clones of the current commit while
# `stress-ng --cpu 2` keeps two CPUs busy beside it: the way a busy CI
# machine runs it, where a test that waits on time instead of on the
# server's own signal fails.
#
#   test/stress.sh                 # 3 runs
#   STRESS_RUNS=1 test/stress.sh   # one run
#   STRESS_CPUS=4 test/stress.sh   # more background load
#   make stress                    # the same, from the Makefile
#
# It tests HEAD of the repository it is run from (commit first: uncommitted
# changes are not in the clone). Each run gets its own clone in a temporary
# directory and its own log; the Go build and module caches are the usual
# ones, as on CI. One summary line per run: result, duration, failed tests.
# The exit status is 1 when any run failed. Logs are kept in the printed
# directory (STRESS_KEEP=1 keeps the clones too). The script is read whole
# before it runs (main at the end), so editing it during a run is safe.
set -euo pipefail

# install_stress_ng installs stress-ng from Debian when it is missing, as
# test/deps.sh installs the tools of the tests.
install_stress_ng() {
	command -v stress-ng >/dev/null 2>&1 && return
	if [ "$(id -u)" -ne 0 ]; then
		echo "test/stress.sh: stress-ng is missing and not root: install it (apt-get install stress-ng)" >&2
		exit 1
	fi
	echo "test/stress.sh: installing stress-ng"
	DEBIAN_FRONTEND=noninteractive apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends stress-ng
}

stress_pid=
stop_stress() {
	if [ -n "$stress_pid" ]; then
		kill "$stress_pid" 2>/dev/null || true
		wait "$stress_pid" 2>/dev/null || true
		stress_pid=
	fi
}

# clone makes a fresh clone of commit $2 of the repository $1 in $3.
clone() {
	git init -q "$3"
	git -C "$3" fetch -q "$1" HEAD
	git -C "$3" checkout -q --detach "$2"
}

# failures prints what failed in the log $1, comma separated: the failed
# tests (the deepest subtests, not their parents), the failed packages,
# fuzz targets and the make target that stopped the run.
failures() {
	local names
	names=$({
		grep -o -- '--- FAIL: [^ ]*' "$1" | sed 's/^--- FAIL: //' |
			awk '{n[NR] = $0} END {for (i = 1; i <= NR; i++) {leaf = 1; for (j = 1; j <= NR; j++) if (index(n[j], n[i] "/") == 1) leaf = 0; if (leaf) print n[i]}}'
		grep -E '^FAIL[[:space:]]+[^[:space:]]+[[:space:]]' "$1" | awk '{print "package " $2}'
		grep -o '^FAILED: .*' "$1" | sed 's/^FAILED: /fuzz /'
		grep -o '^panic: .*' "$1" | head -1
		grep -o 'make: \*\*\* \[[^]]*\]' "$1" | tail -1 | sed 's/.*[[ ]\([^] ]*\)\]$/make target \1/'
	} | awk '!seen[$0]++' | paste -sd, - | sed 's/,/, /g')
	echo "${names:-no test named; see the log}"
}

# elapsed prints the seconds $1 as 6m04s.
elapsed() { printf '%4dm%02ds' $(($1 / 60)) $(($1 % 60)); }

main() {
	local root runs cpus commit work failed=0 summary=() i dir log start line
	root=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
	runs=${STRESS_RUNS:-3}
	cpus=${STRESS_CPUS:-2}
	case $runs in '' | *[!0-9]* | 0) echo "test/stress.sh: STRESS_RUNS=$runs: want a number of runs such as 3" >&2; exit 2 ;; esac
	case $cpus in '' | *[!0-9]* | 0) echo "test/stress.sh: STRESS_CPUS=$cpus: want a number of CPU workers such as 2" >&2; exit 2 ;; esac
	commit=$(git -C "$root" rev-parse HEAD)
	if [ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]; then
		echo "test/stress.sh: the work tree has uncommitted changes; testing the commit $commit without them"
	fi
	install_stress_ng
	# As .ci/run: the end-to-end tests must run, never skip.
	export SNIGATE_REQUIRE_E2E=${SNIGATE_REQUIRE_E2E:-1}
	work=$(mktemp -d "${TMPDIR:-/tmp}/snigate-stress.XXXXXX")
	trap stop_stress EXIT
	trap 'exit 130' INT TERM

	echo "test/stress.sh: $runs run(s) of make test at ${commit:0:12} beside stress-ng --cpu $cpus; logs in $work"
	# The timeout only bounds stress-ng should this script be killed
	# without running its trap; it is stopped by its PID after the runs.
	stress-ng --cpu "$cpus" --timeout "$((runs * 2))h" --quiet &
	stress_pid=$!

	for i in $(seq 1 "$runs"); do
		dir=$work/run$i
		log=$work/run$i.log
		clone "$root" "$commit" "$dir"
		start=$SECONDS
		if (cd "$dir" && make test) >"$log" 2>&1; then
			line="run $i/$runs: PASS $(elapsed $((SECONDS - start)))"
		else
			failed=1
			line="run $i/$runs: FAIL $(elapsed $((SECONDS - start)))  $(failures "$log")  (log $log)"
		fi
		echo "$line"
		summary+=("$line")
		[ "${STRESS_KEEP:-0}" = 1 ] || rm -rf "$dir"
	done
	stop_stress

	echo "== test/stress.sh: make test at ${commit:0:12} under stress-ng --cpu $cpus"
	printf '%s\n' "${summary[@]}"
	return "$failed"
}

main "$@"; exit
