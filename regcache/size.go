package regcache

import "github.com/snigate/snigate/internal/size"

// ParseSize parses a size such as "50GiB", "512MiB", "1.5TiB", "100GB" or
// "1048576" (bytes) into bytes: size.ParseDecimal, so it reads back what
// FormatSize writes. The error says what was expected.
func ParseSize(s string) (int64, error) { return size.ParseDecimal(s) }

// FormatSize writes n bytes in the largest binary unit that keeps at least
// one whole unit, with up to one decimal: "50GiB", "1.5MiB", "512B"
// (size.Format).
func FormatSize(n int64) string { return size.Format(n) }
