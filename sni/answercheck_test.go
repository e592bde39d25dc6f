package sni

import "testing"

// TestAnswerCheckResult: a connection offering AnswerCheckALPN that ends
// the way a check does is the check's own result; one that fails for a
// reason the operator must see keeps it, and nodes keep theirs.
func TestAnswerCheckResult(t *testing.T) {
	check := []string{"h2", "http/1.1", AnswerCheckALPN}
	tests := []struct {
		name   string
		alpn   []string
		result string
		want   string
	}{
		{name: "check left after the ServerHello (bridge)", alpn: check, result: resultClientError, want: resultAnswerCheck},
		{name: "check through a splice tunnel", alpn: check, result: resultOK, want: resultAnswerCheck},
		{name: "check that found no upstream", alpn: check, result: resultNoUpstream, want: resultNoUpstream},
		{name: "check timed out", alpn: check, result: resultTimeout, want: resultTimeout},
		{name: "node that failed its handshake", alpn: []string{"h2", "http/1.1"}, result: resultClientError, want: resultClientError},
		{name: "node without ALPN", result: resultOK, want: resultOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ss := &session{hello: ClientHello{ALPN: tt.alpn}}
			if got := ss.answerCheckResult(tt.result); got != tt.want {
				t.Errorf("answerCheckResult(%s) = %s, want %s", tt.result, got, tt.want)
			}
		})
	}
}
