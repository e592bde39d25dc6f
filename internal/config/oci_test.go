package config

import (
	"slices"
	"testing"

	"github.com/snigate/snigate/oci"
)

// TestConfigAgreesWithOCI: what the configuration accepts for
// http.methods and http.repositories is what the bridge built from it
// accepts (package oci), so that a file `check` passes never fails to
// build, and a pattern the bridge would take is never refused here.
func TestConfigAgreesWithOCI(t *testing.T) {
	if !slices.Equal(DefaultMethods, oci.DefaultMethods()) {
		t.Errorf("DefaultMethods %v, oci %v", DefaultMethods, oci.DefaultMethods())
	}
	if err := oci.CheckMethods(knownMethods); err != nil {
		t.Errorf("a known method the bridge refuses: %v", err)
	}
	for _, m := range DefaultMethods {
		if !oci.IsKnownMethod(m) {
			t.Errorf("default method %s is not a known one", m)
		}
	}
	tests := []struct {
		name, pattern string
	}{
		{name: "exact", pattern: "team/app"},
		{name: "star", pattern: "team/*"},
		{name: "double star", pattern: "team/**"},
		{name: "lone double star", pattern: "**"},
		{name: "separators", pattern: "my-org/app_x__y.z--w"},
		{name: "double star not last", pattern: "team/**/app"},
		{name: "partial wildcard", pattern: "team/app-*"},
		{name: "upper case", pattern: "Team/app"},
		{name: "empty component", pattern: "team//app"},
		{name: "empty", pattern: ""},
		{name: "leading separator", pattern: "team/-app"},
		{name: "triple underscore", pattern: "a___b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := oci.ParseRepoPattern(tt.pattern)
			if msg := checkRepoPattern(tt.pattern); (msg == "") != (err == nil) {
				t.Errorf("config says %q, oci says %v", msg, err)
			}
		})
	}
}
