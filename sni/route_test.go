package sni

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/snigate/snigate/internal/testkit"
	"github.com/snigate/snigate/upstream"
)

// newPool returns a real upstream pool over addrs; its hosts start
// healthy, and no health loop runs in tests unless one starts it.
func newPool(tb testing.TB, route string, addrs ...string) *upstream.Pool {
	tb.Helper()
	p, err := upstream.New(upstream.Config{Route: route, Addrs: addrs, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func TestNewTableLookup(t *testing.T) {
	pool := newPool(t, "x", "127.0.0.1:1")
	exact := &Route{Name: "exact", SNI: []string{"registry.example.com"}, Mode: ModeSplice, Pool: pool}
	wild := &Route{Name: "wild", SNI: []string{"*.example.com"}, Mode: ModeSplice, Pool: pool}
	def := &Route{Name: "fallback", Mode: ModeSplice, Pool: pool}
	tab, err := NewTable([]*Route{exact, wild, def}, "fallback")
	if err != nil {
		t.Fatal(err)
	}
	noDefault, err := NewTable([]*Route{exact, wild}, "")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		table *Table
		sni   string
		want  *Route
	}{
		{name: "exact beats wildcard", table: tab, sni: "registry.example.com", want: exact},
		{name: "case and trailing dot", table: tab, sni: "REGISTRY.example.com.", want: exact},
		{name: "wildcard", table: tab, sni: "mirror.example.com", want: wild},
		{name: "two labels fall to default", table: tab, sni: "a.b.example.com", want: def},
		{name: "no sni takes default", table: tab, sni: "", want: def},
		{name: "unknown without default", table: noDefault, sni: "other.test", want: nil},
		{name: "no sni without default", table: noDefault, sni: "", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.table.Lookup(tt.sni)
			if got != tt.want || ok != (tt.want != nil) {
				t.Errorf("Lookup(%q) = %v, %v; want %v", tt.sni, routeName(got), ok, routeName(tt.want))
			}
		})
	}
	if tab.Route("wild") != wild || tab.Route("nope") != nil || len(tab.Routes()) != 3 {
		t.Error("Route/Routes do not reflect the table")
	}
}

func TestNewTableErrors(t *testing.T) {
	pool := newPool(t, "x", "127.0.0.1:1")
	cert := testkit.StaticCert{}
	tests := []struct {
		name   string
		routes []*Route
		def    string
		want   []string
	}{
		{name: "duplicate name", routes: []*Route{
			{Name: "a", SNI: []string{"a.test"}, Mode: ModeSplice, Pool: pool},
			{Name: "a", SNI: []string{"b.test"}, Mode: ModeSplice, Pool: pool},
		}, want: []string{`routes[1] "a": route name used twice`}},
		{name: "duplicate sni", routes: []*Route{
			{Name: "a", SNI: []string{"a.test"}, Mode: ModeSplice, Pool: pool},
			{Name: "b", SNI: []string{"A.test."}, Mode: ModeSplice, Pool: pool},
		}, want: []string{`sni "A.test." is already routed to "a"`}},
		{name: "bad pattern", routes: []*Route{{Name: "a", SNI: []string{"a.*.test"}, Mode: ModeSplice, Pool: pool}},
			want: []string{`routes[0] "a": sni:`}},
		{name: "bad mode", routes: []*Route{{Name: "a", Mode: "tunnel", Pool: pool}}, want: []string{`mode "tunnel": want "splice" or "bridge"`}},
		{name: "no pool", routes: []*Route{{Name: "a", Mode: ModeSplice}}, want: []string{"pool:"}},
		{name: "bridge without serve", routes: []*Route{{Name: "a", Mode: ModeBridge, Pool: pool}}, want: []string{"serve:"}},
		{name: "proxy protocol on bridge", routes: []*Route{{Name: "a", Mode: ModeBridge, Pool: pool, Serve: cert, ProxyProtocol: "v1"}},
			want: []string{"splice routes only"}},
		{name: "bad proxy protocol", routes: []*Route{{Name: "a", Mode: ModeSplice, Pool: pool, ProxyProtocol: "v3"}}, want: []string{`proxy_protocol "v3"`}},
		{name: "serve on splice", routes: []*Route{{Name: "a", Mode: ModeSplice, Pool: pool, Serve: cert}}, want: []string{"bridge routes only"}},
		{name: "unknown default", routes: []*Route{{Name: "a", Mode: ModeSplice, Pool: pool}}, def: "b",
			want: []string{`default route "b": no route has that name`}},
		{name: "all errors reported", routes: []*Route{{Name: "", Mode: ModeSplice, Pool: pool}, {Name: "b", Mode: "x", Pool: pool}},
			want: []string{"routes[0]", "routes[1]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewTable(tt.routes, tt.def)
			if err == nil {
				t.Fatal("NewTable accepted an invalid table")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func BenchmarkTableLookup(b *testing.B) {
	pool := newPool(b, "x", "127.0.0.1:1")
	var routes []*Route
	for i := range 100 {
		routes = append(routes, &Route{Name: fmt.Sprintf("r%d", i),
			SNI:  []string{fmt.Sprintf("registry-%d.example.com", i), fmt.Sprintf("*.mirror-%d.example.com", i)},
			Mode: ModeSplice, Pool: pool})
	}
	tab, err := NewTable(routes, "")
	if err != nil {
		b.Fatal(err)
	}
	for _, q := range []string{"registry-42.example.com", "eu.mirror-42.example.com", "unknown.example.org"} {
		b.Run(q, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tab.Lookup(q)
			}
		})
	}
}
