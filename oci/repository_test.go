package oci

import (
	"strings"
	"testing"
)

func TestRepoPatternMatch(t *testing.T) {
	tests := []struct {
		name, pattern, repo string
		want                bool
	}{
		{name: "exact", pattern: "team/app", repo: "team/app", want: true},
		{name: "exact, other", pattern: "team/app", repo: "team/app2", want: false},
		{name: "exact, deeper", pattern: "team/app", repo: "team/app/x", want: false},
		{name: "star, one segment", pattern: "team/*", repo: "team/app", want: true},
		{name: "star, two segments", pattern: "team/*", repo: "team/app/x", want: false},
		{name: "star, parent itself", pattern: "team/*", repo: "team", want: false},
		{name: "double star, one", pattern: "team/**", repo: "team/app", want: true},
		{name: "double star, deep", pattern: "team/**", repo: "team/a/b/c", want: true},
		{name: "double star, parent itself", pattern: "team/**", repo: "team", want: false},
		{name: "double star, prefix of a name", pattern: "team/**", repo: "teammate/app", want: false},
		{name: "star in the middle", pattern: "team/*/app", repo: "team/x/app", want: true},
		{name: "star in the middle, other", pattern: "team/*/app", repo: "team/x/y", want: false},
		{name: "lone star", pattern: "*", repo: "app", want: true},
		{name: "lone star, two segments", pattern: "*", repo: "team/app", want: false},
		{name: "everything", pattern: "**", repo: "a/b/c", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParseRepoPattern(tt.pattern)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Match(tt.repo); got != tt.want {
				t.Errorf("%q matches %q: %v, want %v", tt.pattern, tt.repo, got, tt.want)
			}
		})
	}
}

func TestRepoPatternErrors(t *testing.T) {
	tests := []struct {
		name, pattern, want string
	}{
		{name: "empty", pattern: "", want: "empty pattern"},
		{name: "double star not last", pattern: "team/**/app", want: `"**" may only be the last component`},
		{name: "partial wildcard", pattern: "team/app-*", want: "partial wildcards are not supported"},
		{name: "upper case", pattern: "Team/app", want: "want lower-case letters and digits"},
		{name: "empty component", pattern: "team//app", want: "want lower-case letters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseRepoPattern(tt.pattern)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}
