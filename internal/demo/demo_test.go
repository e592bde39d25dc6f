package demo

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestDemo runs the whole tour, as `snigate demo` does, and checks that
// every step is printed and succeeded.
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := Run(ctx, Options{Out: &out}); err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, step := range []string{
		"ok   create throwaway PKI",
		"ok   start an mTLS-only registry",
		"ok   push an image to it",
		"ok   start snigate (bridge mode + DNS responder)",
		"ok   resolve registry.example.test via snigate DNS",
		"ok   pull through snigate (no proxy, no client cert)",
		"ok   pull directly without the edge cert",
		"verdict: OK",
	} {
		if !strings.Contains(text, step) {
			t.Errorf("output lacks %q:\n%s", step, text)
		}
	}
	if strings.Contains(text, "FAIL") {
		t.Errorf("a step failed:\n%s", text)
	}
}
