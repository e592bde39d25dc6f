package regcache

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// sizeUnits are the suffixes ParseSize accepts, longest first so that
// "GiB" is tried before "B".
var sizeUnits = []struct {
	suffix string
	factor int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"PiB", 1 << 50},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"PB", 1e15},
	{"B", 1},
}

// ParseSize parses a size such as "50GiB", "512MiB", "1.5TiB", "100GB" or
// "1048576" (bytes) into bytes. Binary units (KiB, MiB, GiB, TiB, PiB) are
// powers of 1024, decimal ones (KB, MB, GB, TB, PB) powers of 1000; units
// are case-sensitive and a space before the unit is allowed. The size must
// be positive and fit in an int64. The error says what was expected, for
// a config error such as `snigate.yaml:14: routes[0].http.cache.max_size: ...`.
func ParseSize(s string) (int64, error) {
	num, factor := splitSize(strings.TrimSpace(s))
	n, ok := sizeBytes(num, factor)
	if !ok {
		return 0, fmt.Errorf("want a size such as \"50GiB\", \"512MiB\" or \"100GB\" (at least 1 byte, below 8EiB), got %q", s)
	}
	return n, nil
}

// sizeBytes is num (digits, with at most one decimal point) times factor,
// exact for whole numbers.
func sizeBytes(num string, factor int64) (int64, bool) {
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

// splitSize splits s into its number and the factor of its unit (1 when
// it has none).
func splitSize(s string) (string, int64) {
	for _, u := range sizeUnits {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			return strings.TrimRight(num, " "), u.factor
		}
	}
	return s, 1
}

// FormatSize writes n bytes in the largest binary unit that keeps at least
// one whole unit, with up to one decimal: "50GiB", "1.5MiB", "512B".
// ParseSize reads it back (to within the rounding of that decimal).
func FormatSize(n int64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	if n < 1<<10 && n > -(1<<10) {
		return strconv.FormatInt(n, 10) + "B"
	}
	v, i := float64(n)/(1<<10), 0
	for math.Abs(v) >= 1<<10 && i < len(units)-1 {
		v /= 1 << 10
		i++
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) + units[i]
}
