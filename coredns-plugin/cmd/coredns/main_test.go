package main

import (
	"slices"
	"testing"

	"github.com/coredns/coredns/core/dnsserver"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestChainPosition: in the chain CoreDNS actually builds, snigate sees a
// query after the plugins that rewrite, filter or cache it and after hosts,
// and before every backend that could answer a routed name with its real
// address.
func TestChainPosition(t *testing.T) {
	d, err := withDirective(dnsserver.Directives, "snigate", after)
	if err != nil {
		t.Fatal(err)
	}
	at := slices.Index(d, "snigate")
	if at < 0 {
		t.Fatal("snigate not in the directives")
	}
	for _, before := range []string{"rewrite", "acl", "cache", "template", "hosts"} {
		if i := slices.Index(d, before); i < 0 || i > at {
			t.Errorf("%s (at %d) must come before snigate (at %d)", before, i, at)
		}
	}
	for _, later := range []string{"kubernetes", "file", "etcd", "loop", "forward", "grpc"} {
		if i := slices.Index(d, later); i < 0 || i < at {
			t.Errorf("%s (at %d) must come after snigate (at %d)", later, i, at)
		}
	}
	if n := len(d) - len(dnsserver.Directives); n != 1 {
		t.Errorf("withDirective added %d directives, want 1", n)
	}
}

func TestWithDirective(t *testing.T) {
	tests := []struct {
		name    string
		in      []string
		want    []string
		wantErr bool
	}{
		{"after the anchor", []string{"cache", "hosts", "forward"}, []string{"cache", "hosts", "snigate", "forward"}, false},
		{"already present", []string{"hosts", "snigate", "forward"}, []string{"hosts", "snigate", "forward"}, false},
		{"anchor missing is an error, not a guess", []string{"cache", "forward"}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.in)
			got, err := withDirective(in, "snigate", "hosts")
			if (err != nil) != tc.wantErr {
				t.Fatalf("withDirective(%v) error = %v, want error: %v", tc.in, err, tc.wantErr)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("withDirective(%v) = %v, want %v", tc.in, got, tc.want)
			}
			if !slices.Equal(in, tc.in) {
				t.Errorf("withDirective changed its input to %v", in)
			}
		})
	}
}
