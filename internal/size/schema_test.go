package size

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

const schemaFile = "../../docs/snigate.schema.json"

// sizePatterns returns the schema's patterns for sizes: every "pattern"
// that names the units.
func sizePatterns(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", schemaFile, err)
	}
	var found []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if p, ok := v["pattern"].(string); ok && strings.Contains(p, "KiB") {
				found = append(found, p)
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(doc)
	if len(found) == 0 {
		t.Fatalf("%s has no size pattern (one naming KiB)", schemaFile)
	}
	return found
}

// sizeStrings generates sizes good and bad: numbers (whole, zero, leading
// zeros, decimal, signed, empty), separators, units (known, wrong case,
// unknown, none) and surrounding white space. The numbers stay below the
// int64 limit, which the schema does not state.
func sizeStrings() []string {
	nums := []string{"", "0", "00", "1", "007", "10", "999", "1.5", ".", "-1", "+1", "1e3", "0x1", "1 2"}
	seps := []string{"", " ", "\t", "  "}
	unitNames := []string{"", "B", "KB", "MB", "GB", "TB", "PB", "KiB", "MiB", "GiB", "TiB", "PiB", "gib", "iB", "K", "EiB", "B B"}
	pads := []string{"", " "}
	var out []string
	for _, n := range nums {
		for _, sep := range seps {
			for _, u := range unitNames {
				for _, pad := range pads {
					out = append(out, pad+n+sep+u+pad)
				}
			}
		}
	}
	return out
}

// TestSchemaPatternIsParse: the schema's size pattern accepts exactly the
// strings Parse accepts, so an editor and `snigate check` agree.
func TestSchemaPatternIsParse(t *testing.T) {
	for _, p := range sizePatterns(t) {
		re, err := regexp.Compile(p)
		if err != nil {
			t.Fatalf("schema pattern %q: %v", p, err)
		}
		for _, s := range sizeStrings() {
			_, err := Parse(s)
			if match := re.MatchString(s); match != (err == nil) {
				t.Errorf("%q: schema pattern %q matches = %v, Parse error = %v", s, p, match, err)
			}
		}
	}
}

func TestParseWholeOnly(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int64
		err  bool
	}{
		{name: "bytes", in: "1048576", want: 1 << 20},
		{name: "unit", in: "50GiB", want: 50 << 30},
		{name: "space and tab", in: "1 \tTiB", want: 1 << 40},
		{name: "largest", in: "8191PiB", want: 8191 << 50},
		{name: "fraction", in: "1.5GiB", err: true},
		{name: "zero", in: "0B", err: true},
		{name: "overflow", in: "8192PiB", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.in)
			if tt.err != (err != nil) || got != tt.want {
				t.Fatalf("Parse(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.err)
			}
		})
	}
}
