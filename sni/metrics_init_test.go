package sni

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestEveryResultIsCreatedAtZero: each result constant of the package is
// in a list InitListener or InitRoute creates at 0, so a result added
// later cannot be missed by increase() at its first occurrence.
func TestEveryResultIsCreatedAtZero(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	known := slices.Concat(routedResults, unroutedResults, connectResults)
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok || len(vs.Names) != 1 || len(vs.Values) != 1 || !strings.HasPrefix(vs.Names[0].Name, "result") {
				return true
			}
			lit, ok := vs.Values[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			v, _ := strconv.Unquote(lit.Value)
			if v != resultDetached && !slices.Contains(known, v) {
				t.Errorf("%s: result %s = %q is in no list of metrics.go that creates series at 0", f, vs.Names[0].Name, v)
			}
			return true
		})
	}
}

func TestInitSeries(t *testing.T) {
	tests := []struct {
		name    string
		init    func(m *Metrics)
		wantNum int // snigate_connections_total series
	}{
		{name: "TLS listener", init: func(m *Metrics) { m.InitListener("127.0.0.1:443", false) }, wantNum: len(unroutedResults)},
		{name: "CONNECT listener", init: func(m *Metrics) { m.InitListener("127.0.0.1:3128", true) },
			wantNum: len(unroutedResults) + len(connectResults)},
		{name: "route on two listeners", init: func(m *Metrics) {
			m.InitRoute("registry", []string{"10.0.0.1:443"}, []string{"127.0.0.1:443", "127.0.0.1:3128"})
		}, wantNum: 2 * len(routedResults)},
		{name: "nil metrics", init: func(m *Metrics) {
			var none *Metrics
			none.InitListener("x", true)
			none.InitRoute("r", []string{"u"}, []string{"x"})
			none.DeleteUpstream("r", "u")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMetrics(nil)
			tt.init(m)
			if n := testutil.CollectAndCount(m.connections); n != tt.wantNum {
				t.Errorf("%d connections_total series, want %d", n, tt.wantNum)
			}
		})
	}
}

func TestDeleteUpstreamDropsItsDialFailures(t *testing.T) {
	m := NewMetrics(nil)
	m.InitRoute("registry", []string{"10.0.0.1:443", "10.0.0.2:443"}, []string{"127.0.0.1:443"})
	m.DeleteUpstream("registry", "10.0.0.2:443")
	if m.dialFailures.DeleteLabelValues("registry", "10.0.0.2:443") {
		t.Error("the removed upstream's dial failure series is still there")
	}
	if !m.dialFailures.DeleteLabelValues("registry", "10.0.0.1:443") {
		t.Error("the kept upstream's dial failure series is gone")
	}
}
