#!/usr/bin/env bash
# Runs every Go fuzz target of every module in this repository for $1
# (default 30s; a count such as 500x works too) each: `make fuzz`
# (FUZZTIME=10m make fuzz for a long run), `make fuzz-short` (500 inputs
# each: proves in CI that every target still builds, passes its committed
# seed corpus and fuzzes).
#
# go test accepts one -fuzz target per run, so the targets are found first:
# the `func FuzzXxx(` declarations in each package's test files (go list
# names them; no test binary is built just to list them). Every target
# runs even when one fails; the failures are listed at the end and the
# exit status is 1. A crasher is written to the package's
# testdata/fuzz/FuzzXxx/ by go test: rerun it with the command it prints,
# fix the bug, and keep the file as a named regression seed.
set -euo pipefail
cd "$(dirname "$0")/.."
t=${1:-30s}
go=${GO:-go}

# targets prints "importpath FuzzName" for each fuzz target of the module
# in the current directory.
targets() {
	"$go" list -f '{{.ImportPath}}{{range .TestGoFiles}} {{$.Dir}}/{{.}}{{end}}{{range .XTestGoFiles}} {{$.Dir}}/{{.}}{{end}}' ./... |
		while read -r pkg files; do
			[ -n "$files" ] || continue
			# shellcheck disable=SC2086 # files is a list
			{ grep -ho '^func Fuzz[A-Za-z0-9_]*(' $files || true; } | sed 's/^func \(.*\)(/\1/' | sort -u |
				while read -r f; do echo "$pkg $f"; done
		done
}

failed=()
n=0
start=$SECONDS
for mod in . coredns-plugin deploy; do
	[ -f "$mod/go.mod" ] || continue
	while read -r pkg f; do
		n=$((n + 1))
		echo "== $pkg $f ($t)"
		if ! (cd "$mod" && "$go" test -run '^$' -fuzz "^$f\$" -fuzztime "$t" "$pkg"); then
			failed+=("$pkg $f")
		fi
	done < <(cd "$mod" && targets)
done
echo "== $n fuzz targets, $((SECONDS - start))s"
if [ "$n" -eq 0 ]; then
	echo "no fuzz target found" >&2
	exit 1
fi
if [ "${#failed[@]}" -gt 0 ]; then
	printf 'FAILED: %s\n' "${failed[@]}" >&2
	exit 1
fi
