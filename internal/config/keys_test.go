package config

import (
	"go/ast"
	goparser "go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// notKeys are exported Default* identifiers that are not a key's default
// themselves, each with where its value is in the table.
var notKeys = map[string]string{
	"DefaultMaxHandshakesCap": "part of DefaultMaxHandshakes, which max_handshakes' row calls",
}

// enumPrefixes name the constants that are values of an enum key.
var enumPrefixes = regexp.MustCompile(`^(Mode|Balance|Check|ProxyProtocol|Redirects)[A-Z0-9]`)

// packageIdents returns the exported identifiers declared at top level in
// the package's non-test files, and the identifiers that keys.go uses.
func packageIdents(t *testing.T) (declared []string, used map[string]bool) {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	used = map[string]bool{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := goparser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for obj := range f.Scope.Objects {
			if ast.IsExported(obj) {
				declared = append(declared, obj)
			}
		}
		if name == "keys.go" {
			ast.Inspect(f, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok {
					used[id.Name] = true
				}
				return true
			})
		}
	}
	return declared, used
}

// TestKeysNameEveryDefault: the table of keys (Keys) names every
// exported default and every enum value the package declares, so a
// default added without its row (and so without its package counterpart,
// which the gateway's contract test asks for) fails here.
func TestKeysNameEveryDefault(t *testing.T) {
	declared, used := packageIdents(t)
	for _, name := range declared {
		if !strings.HasPrefix(name, "Default") && !enumPrefixes.MatchString(name) {
			continue
		}
		if _, skip := notKeys[name]; skip {
			continue
		}
		if !used[name] {
			t.Errorf("%s is not in keys.go's table: add the row of the key it belongs to", name)
		}
	}
}
