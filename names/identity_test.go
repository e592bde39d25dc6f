package names

import (
	"strings"
	"testing"
)

func TestMatchIdentity(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		kind    IdentityKind
		value   string
		want    bool
	}{
		{"exact CN", "system:node:worker-1", IdentityCN, "system:node:worker-1", true},
		{"CN differs", "system:node:worker-1", IdentityCN, "system:node:worker-2", false},
		{"CN is case-sensitive", "system:node:Worker-1", IdentityCN, "system:node:worker-1", false},
		{"node wildcard", "system:node:*", IdentityCN, "system:node:worker-1", true},
		{"node wildcard crosses dots", "system:node:*", IdentityCN, "system:node:ip-10-0-1-5.ec2.internal", true},
		{"node wildcard does not cross a colon", "system:node:*", IdentityCN, "system:node:a:b", false},
		{"node wildcard needs a name", "system:node:*", IdentityCN, "system:node:", false},
		{"other group", "system:node:*", IdentityCN, "system:kube-proxy", false},
		{"prefix and suffix", "system:node:eu-*-pool", IdentityCN, "system:node:eu-7-pool", true},
		{"prefix and suffix overlap", "system:node:ab*ba", IdentityCN, "system:node:aba", false},
		{"DNS one label", "*.nodes.example.com", IdentityDNS, "worker-1.nodes.example.com", true},
		{"DNS not two labels", "*.nodes.example.com", IdentityDNS, "a.b.nodes.example.com", false},
		{"DNS not the base", "*.nodes.example.com", IdentityDNS, "nodes.example.com", false},
		{"DNS ignores case and trailing dot", "*.Nodes.example.com", IdentityDNS, "W1.nodes.EXAMPLE.com.", true},
		{"DNS partial label", "worker-*.example.com", IdentityDNS, "worker-9.example.com", true},
		{"URI one segment", "spiffe://cluster.local/ns/*/sa/node", IdentityURI, "spiffe://cluster.local/ns/kube-system/sa/node", true},
		{"URI not two segments", "spiffe://cluster.local/ns/*/sa/node", IdentityURI, "spiffe://cluster.local/ns/a/b/sa/node", false},
		{"URI is case-sensitive", "spiffe://cluster.local/ns/x/sa/Node", IdentityURI, "spiffe://cluster.local/ns/x/sa/node", false},
		{"empty value", "system:node:*", IdentityCN, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := CheckIdentityPattern(tt.pattern); err != nil {
				t.Fatalf("CheckIdentityPattern(%q): %v", tt.pattern, err)
			}
			if got := MatchIdentity(tt.pattern, tt.kind, tt.value); got != tt.want {
				t.Errorf("MatchIdentity(%q, %d, %q) = %v, want %v", tt.pattern, tt.kind, tt.value, got, tt.want)
			}
		})
	}
}

func TestCheckIdentityPattern(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		wantErr string // "" for valid
	}{
		{"kubelet", "system:node:*", ""},
		{"exact", "system:node:worker-1", ""},
		{"spaces are fine in a CN", "Jane Doe", ""},
		{"empty", "", "empty pattern"},
		{"star alone", "*", "leave client_names empty"},
		{"two stars", "system:*:*", "more than one"},
		{"control character", "system:node:\n", "control character"},
		{"not UTF-8", "system:node:\xff", "UTF-8"},
		{"too long", strings.Repeat("a", MaxIdentityPatternLen+1), "at most 1024"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckIdentityPattern(tt.pattern)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("CheckIdentityPattern(%q) = %v, want nil", tt.pattern, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("CheckIdentityPattern(%q) = %v, want an error containing %q", tt.pattern, err, tt.wantErr)
			}
		})
	}
}
