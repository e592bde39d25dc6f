// Package size reads and writes byte sizes such as "50GiB", "500MB" or
// "1048576": the one size grammar of the configuration file, its JSON
// schema (docs/snigate.schema.json, whose pattern a test holds to Parse)
// and the cache's reports.
//
// Usage:
//
//	n, err := size.Parse("50GiB") // 53687091200
//	s := size.Format(n)           // "50GiB"
package size

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// units are the suffixes Parse accepts, longest first so that "GiB" is
// tried before "B": binary units are powers of 1024, decimal ones powers
// of 1000; they are case-sensitive.
var units = []struct {
	suffix string
	factor int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"PiB", 1 << 50},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"PB", 1e15},
	{"B", 1},
}

// Parse parses a whole size: digits, optionally white space and a unit
// (B, KB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB), with white space
// around it allowed. The size must be at least 1 byte and fit in an int64.
// The error says what was expected.
func Parse(s string) (int64, error) {
	num, factor := split(s)
	if strings.Contains(num, ".") {
		return 0, errWant(s)
	}
	return parse(s, num, factor)
}

// ParseDecimal is Parse that also accepts one decimal point in the
// number, as Format writes it: "1.5TiB". The result is rounded down to a
// whole byte and must be at least 1.
func ParseDecimal(s string) (int64, error) {
	num, factor := split(s)
	return parse(s, num, factor)
}

func parse(s, num string, factor int64) (int64, error) {
	n, ok := bytes(num, factor)
	if !ok {
		return 0, errWant(s)
	}
	return n, nil
}

func errWant(s string) error {
	return fmt.Errorf("want a size such as \"50GiB\", \"512MiB\" or \"100GB\" (at least 1 byte, below 8EiB), got %q", s)
}

// bytes is num (digits, with at most one decimal point) times factor,
// exact for whole numbers.
func bytes(num string, factor int64) (int64, bool) {
	if num == "" || strings.Trim(num, "0123456789.") != "" || strings.Count(num, ".") > 1 || num == "." {
		return 0, false
	}
	if !strings.Contains(num, ".") {
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil || v < 1 || v > math.MaxInt64/factor {
			return 0, false
		}
		return v * factor, true
	}
	v, err := strconv.ParseFloat(num, 64)
	b := v * float64(factor)
	if err != nil || b < 1 || b >= math.MaxInt64 {
		return 0, false
	}
	return int64(b), true
}

// split splits s into its number and the factor of its unit (1 when it
// has none), white space trimmed.
func split(s string) (string, int64) {
	s = strings.TrimSpace(s)
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			return strings.TrimSpace(num), u.factor
		}
	}
	return s, 1
}

// Format writes n bytes in the largest binary unit that keeps at least
// one whole unit, with up to one decimal: "50GiB", "1.5MiB", "512B".
// ParseDecimal reads it back (to within the rounding of that decimal).
func Format(n int64) string {
	names := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	if n < 1<<10 && n > -(1<<10) {
		return strconv.FormatInt(n, 10) + "B"
	}
	v, i := float64(n)/(1<<10), 0
	for math.Abs(v) >= 1<<10 && i < len(names)-1 {
		v /= 1 << 10
		i++
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) + names[i]
}
