package config

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		name string
		err  *Error
		want string
	}{
		{name: "all parts", err: &Error{File: "snigate.yaml", Line: 14, Key: "routes[0].health.interval", Msg: `want a duration such as "3s", got "3"`},
			want: `snigate.yaml:14: routes[0].health.interval: want a duration such as "3s", got "3"`},
		{name: "no key", err: &Error{File: "snigate.yaml", Line: 2, Msg: "not valid YAML: x"},
			want: "snigate.yaml:2: not valid YAML: x"},
		{name: "no line", err: &Error{File: "snigate.yaml", Msg: "cannot read the configuration: x"},
			want: "snigate.yaml: cannot read the configuration: x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestErrorListWorksWithErrorsAs(t *testing.T) {
	_, err := Parse("snigate.yaml", []byte("listen: {tls: [\":443\"]}\nroutes: []\nmax_connections: 0\n"))
	wrapped := fmt.Errorf("check: %w", err)
	var list ErrorList
	if !errors.As(wrapped, &list) || len(list) != 2 {
		t.Fatalf("errors.As(ErrorList) = %v, %d errors; want 2", list, len(list))
	}
	var first *Error
	if !errors.As(wrapped, &first) || first != list[0] {
		t.Fatalf("errors.As(*Error) = %v, want the first of the list", first)
	}
	if first.File != "snigate.yaml" || first.Line != 2 || first.Key != "routes" {
		t.Errorf("first error = %+v, want snigate.yaml line 2 key routes", first)
	}
}

// TestErrorAt: a problem found after parsing (by the builders run and check
// share) is reported at the line of its key, else of the nearest key
// holding it.
func TestErrorAt(t *testing.T) {
	yaml := `listen:
  tls: [":443"]
routes:
  - name: r
    sni:
      - a.example.com
      - c.example.com
      - b.example.com
    mode: splice
    upstreams: ["10.0.0.1:443"]
`
	c, err := Parse("snigate.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, key, want string
	}{
		{name: "a list item", key: c.Routes[0].SNIKeys[2], want: "snigate.yaml:8: routes[0].sni[2]: x"},
		{name: "a key", key: "routes[0].mode", want: "snigate.yaml:9: routes[0].mode: x"},
		{name: "a default: the line of the nearest key holding it", key: "routes[0].health.timeout", want: "snigate.yaml:4: routes[0].health.timeout: x"},
		{name: "nothing holds it", key: "nowhere", want: "snigate.yaml: nowhere: x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.ErrorAt(tt.key, "x").Error(); got != tt.want {
				t.Errorf("ErrorAt(%q) = %q, want %q", tt.key, got, tt.want)
			}
		})
	}
}
