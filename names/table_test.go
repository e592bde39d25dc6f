package names

import (
	"errors"
	"strings"
	"testing"
)

func TestTableLookup(t *testing.T) {
	var tab Table[string]
	for p, v := range map[string]string{
		"registry.example.com":   "exact",
		"*.registry.example.com": "wild",
		"*.example.com":          "parent-wild",
		"Mirror.Example.COM.":    "mirror",
	} {
		if err := tab.Add(p, v); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, query, want string
	}{
		{name: "exact", query: "registry.example.com", want: "exact"},
		{name: "exact beats the parent wildcard", query: "registry.example.com", want: "exact"},
		{name: "case-insensitive", query: "REGISTRY.example.Com", want: "exact"},
		{name: "trailing dot", query: "registry.example.com.", want: "exact"},
		{name: "wildcard one label", query: "eu.registry.example.com", want: "wild"},
		{name: "two labels below a wildcard match nothing", query: "a.b.registry.example.com"},
		{name: "canonicalised pattern", query: "mirror.example.com", want: "mirror"},
		{name: "parent wildcard", query: "other.example.com", want: "parent-wild"},
		{name: "bare base", query: "example.com"},
		{name: "empty", query: ""},
		{name: "unrelated", query: "example.org"},
		{name: "empty first label", query: ".registry.example.com"},
		{name: "star label", query: "*.registry.example.com"},
		{name: "300-byte label", query: label300 + ".registry.example.com"},
		{name: "over 253 bytes", query: strings.Repeat("a.", 120) + "registry.example.com"},
		{name: "invalid label under a wildcard", query: "-x.registry.example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tab.Lookup(tt.query)
			if ok != (tt.want != "") || got != tt.want {
				t.Errorf("Lookup(%.40q) = %q, %v; want %q", tt.query, got, ok, tt.want)
			}
		})
	}
}

func TestTableAdd(t *testing.T) {
	var tab Table[int]
	if err := tab.Add("a.example.com", 1); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, pattern string
		dup           bool
		errText       string // "" : accepted
	}{
		{name: "same name in another case and with a dot", pattern: "A.EXAMPLE.COM.", dup: true, errText: `"A.EXAMPLE.COM.": names: pattern already in the table`},
		{name: "wildcard with the exact name's base", pattern: "*.a.example.com"},
		{name: "invalid pattern", pattern: "-a.example.com", errText: `"-a.example.com": label "-a" starts or ends with a hyphen`},
		{name: "IP", pattern: "192.0.2.1", errText: `"192.0.2.1": an IP address; want a DNS name (a TLS server name or certificate name is never an address)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tab.Add(tt.pattern, 2)
			switch {
			case tt.errText == "" && err != nil:
				t.Fatalf("Add(%q) = %v", tt.pattern, err)
			case tt.errText != "" && (err == nil || err.Error() != tt.errText):
				t.Fatalf("Add(%q) = %v, want %q", tt.pattern, err, tt.errText)
			case errors.Is(err, ErrDuplicate) != tt.dup:
				t.Errorf("errors.Is(%v, ErrDuplicate) = %v, want %v", err, !tt.dup, tt.dup)
			}
		})
	}
	if v, _ := tab.Lookup("a.example.com"); v != 1 {
		t.Errorf("a refused Add changed the value to %d", v)
	}
	if v, ok := tab.Get("*.A.example.com."); !ok || v != 2 {
		t.Errorf("Get of the wildcard = %d, %v; want 2, true", v, ok)
	}
	if _, ok := tab.Get("b.a.example.com"); ok {
		t.Error("Get of a name the wildcard matches found it; Get is for patterns")
	}
	if tab.Len() != 2 {
		t.Errorf("Len = %d, want 2", tab.Len())
	}
}

func TestTableLookupDoesNotAllocate(t *testing.T) {
	var tab Table[int]
	if err := tab.Add("*.registry.example.com", 1); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { tab.Lookup("eu.registry.example.com.") }); n != 0 {
		t.Errorf("Lookup allocates %v times", n)
	}
}
