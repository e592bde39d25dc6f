package config

import (
	"fmt"
	"strings"
)

// suggest returns ` (did you mean "x"?)` for the allowed key closest to
// name, or "" if none is close. Case, '-' and '_' do not count, and up to
// two edits are forgiven (one for short keys).
func suggest(name string, allowed []string) string {
	if len(name) > 64 {
		return ""
	}
	n := normalizeKey(name)
	best, bestDist := "", 3
	if len(n) <= 4 {
		bestDist = 2
	}
	for _, a := range allowed {
		if d := editDistance(n, normalizeKey(a)); d < bestDist {
			best, bestDist = a, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func normalizeKey(s string) string {
	return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(s))
}

// editDistance is the number of insertions, deletions, substitutions and
// swaps of adjacent letters that turn a into b (optimal string alignment).
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
