package demo

import (
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// seconds writes d as run's log lines write durations, seconds in a
// decimal number (here to the millisecond), with the unit: "0.012s".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(math.Round(d.Seconds()*1e3)/1e3, 'f', -1, 64) + "s"
}

// selfCommand is how to run this program again, for the --keep hints:
// the path it was started as, or "go run ./cmd/snigate" when `go run`
// built it into a temporary directory (gone once it exits).
func selfCommand(arg0 string) string {
	if arg0 == "" || strings.Contains(arg0, string(filepath.Separator)+"go-build") {
		return "go run ./cmd/snigate"
	}
	return arg0
}
