package sni

import "testing"

func TestNameTableLookup(t *testing.T) {
	var tab NameTable[string]
	tab.Add("registry.example.com", "exact")
	tab.Add("*.registry.example.com", "wild")
	tab.Add("*.example.com", "parent-wild")
	tab.Add("Mirror.Example.COM.", "mirror")

	tests := []struct {
		name, query, want string
		ok                bool
	}{
		{name: "exact", query: "registry.example.com", want: "exact", ok: true},
		{name: "exact beats wildcard", query: "registry.example.com", want: "exact", ok: true},
		{name: "case-insensitive", query: "REGISTRY.example.Com", want: "exact", ok: true},
		{name: "trailing dot", query: "registry.example.com.", want: "exact", ok: true},
		{name: "wildcard one label", query: "eu.registry.example.com", want: "wild", ok: true},
		{name: "wildcard two labels is not matched by the deeper wildcard", query: "a.b.registry.example.com", ok: false},
		{name: "canonicalised pattern", query: "mirror.example.com", want: "mirror", ok: true},
		{name: "parent wildcard", query: "other.example.com", want: "parent-wild", ok: true},
		{name: "bare suffix does not match wildcard", query: "example.com", ok: false},
		{name: "empty", query: "", ok: false},
		{name: "unrelated", query: "example.org", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tab.Lookup(tt.query)
			if ok != tt.ok || got != tt.want {
				t.Errorf("Lookup(%q) = %q, %v; want %q, %v", tt.query, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestNameTableAddDuplicate(t *testing.T) {
	var tab NameTable[int]
	if !tab.Add("a.example.com", 1) {
		t.Fatal("first Add reported a duplicate")
	}
	if tab.Add("A.EXAMPLE.COM.", 2) {
		t.Error("Add of the same name in another case was accepted")
	}
	if !tab.Add("*.a.example.com", 3) {
		t.Error("wildcard with the same suffix as an exact name reported a duplicate")
	}
	if v, _ := tab.Lookup("a.example.com"); v != 1 {
		t.Errorf("duplicate Add changed the value to %d", v)
	}
}

func TestValidatePattern(t *testing.T) {
	good := []string{"registry.example.com", "*.example.com", "a_b.example.com.", "localhost"}
	bad := []string{"", "*", "a.*.example.com", "*example.com", "ex ample.com", "a..b", "**.example.com"}
	for _, p := range good {
		if err := ValidatePattern(p); err != nil {
			t.Errorf("ValidatePattern(%q) = %v, want nil", p, err)
		}
	}
	for _, p := range bad {
		if err := ValidatePattern(p); err == nil {
			t.Errorf("ValidatePattern(%q) = nil, want an error", p)
		}
	}
}
