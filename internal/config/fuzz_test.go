package config

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzParse feeds arbitrary bytes to Parse. Properties: no panic; success
// means a usable configuration; failure is an ErrorList whose every entry
// names the file, a line inside it and a message.
func FuzzParse(f *testing.F) {
	for _, tc := range errorCases {
		f.Add([]byte(tc.yaml))
	}
	f.Add([]byte(fullExample))
	f.Add([]byte("a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\nlisten: {tls: *c}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.yaml", data)
		if err == nil {
			checkUsable(t, c)
			return
		}
		var list ErrorList
		if !errors.As(err, &list) || len(list) == 0 {
			t.Fatalf("error %T %v: want a non-empty ErrorList", err, err)
		}
		lines := countLines(data)
		for _, e := range list {
			if e.File != "fuzz.yaml" || e.Line < 0 || e.Line > lines || e.Msg == "" {
				t.Fatalf("error %+v: want File fuzz.yaml, a line from 0 to %d and a message", e, lines)
			}
		}
	})
}

// countLines counts lines as YAML does: "\r\n", "\r" and "\n" each end
// one. (A fuzzer found that a lone "\r" is a line break to yaml.v3.)
func countLines(data []byte) int {
	data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	return bytes.Count(data, []byte("\n")) + bytes.Count(data, []byte("\r")) + 1
}

// checkUsable checks what the gateway relies on in a parsed configuration.
func checkUsable(t *testing.T, c *Config) {
	t.Helper()
	if c == nil || len(c.Listen.TLS) == 0 || len(c.Routes) == 0 || c.MaxConnections < 1 {
		t.Fatalf("Parse succeeded with an unusable configuration: %+v", c)
	}
	for _, r := range c.Routes {
		if r.Name == "" || len(r.SNI) == 0 || len(r.Upstreams) == 0 || r.Health.Timeout > r.Health.Interval {
			t.Fatalf("Parse succeeded with an unusable route: %+v", r)
		}
		if r.Mode != ModeBridge && r.Mode != ModeSplice {
			t.Fatalf("route %q: mode %q", r.Name, r.Mode)
		}
	}
}
