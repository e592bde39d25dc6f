package deploy

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snigate/snigate/internal/config"
)

// schemaBridge is a valid bridge route (files are not read) whose http:
// section the property tests fill in.
const schemaBridge = "listen:\n  tls: [\":443\"]\nroutes:\n  - name: r\n    sni: [r.example.com]\n    mode: bridge\n    upstreams: [\"10.1.0.1:443\"]\n" +
	"    serve: {cert: a.crt, key: a.key}\n    upstream_tls: {}\n"

// TestSchemaAgreesWithParser generates values for the keys whose rules
// the schema spells out (http.methods, http.repositories,
// http.cache.max_size) and checks that docs/snigate.schema.json and the
// parser `snigate check` uses accept and refuse the same ones, both
// ways: the schema once refused `methods: [get, head]`, which check
// accepts, and accepted `max_size: 0` and repository patterns check
// refuses. Left to check alone, since a schema cannot say them: a method
// listed twice in different case, a repository starting with the route's
// own host name, a size beyond 8 EiB.
func TestSchemaAgreesWithParser(t *testing.T) {
	s := compileSchema(t)
	rng := rand.New(rand.NewPCG(27, 8))
	dir := t.TempDir()
	gens := []struct {
		name string
		gen  func(*rand.Rand) string
	}{
		{name: "methods", gen: genMethods},
		{name: "repositories", gen: genRepositories},
		{name: "max_size", gen: genMaxSize},
	}
	for _, g := range gens {
		t.Run(g.name, func(t *testing.T) {
			seen := map[string]bool{}
			for range 400 {
				section := g.gen(rng)
				if seen[section] {
					continue
				}
				seen[section] = true
				text := schemaBridge + "    http: " + section + "\n"
				schemaErr := validateYAML(s, text)
				parseErr := parseText(t, dir, text)
				if (schemaErr == nil) != (parseErr == nil) {
					t.Errorf("http: %s\nschema: %v\nparser: %v", section, orOK(schemaErr), orOK(parseErr))
				}
			}
		})
	}
}

func orOK(err error) string {
	if err == nil {
		return "accepted"
	}
	return "refused: " + err.Error()
}

// parseText is `snigate check` on text, without reading the files it names.
func parseText(t *testing.T, dir, text string) error {
	t.Helper()
	path := filepath.Join(dir, "snigate.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := config.LoadWithoutFiles(path)
	return err
}

// genMethods is a methods list of distinct methods, known or not, each
// in a random case.
func genMethods(r *rand.Rand) string {
	pool := []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "FETCH", "TRACE", "CONNECT", "GETX", "G-ET"}
	r.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	var out []string
	for _, m := range pool[:r.IntN(4)] {
		b := []byte(m)
		for i := range b {
			if r.IntN(2) == 0 {
				b[i] = strings.ToLower(string(b[i]))[0]
			}
		}
		out = append(out, string(b))
	}
	return "{methods: [" + strings.Join(out, ", ") + "]}"
}

// genRepositories is a list of patterns made of valid and invalid
// segments (none is the route's host name).
func genRepositories(r *rand.Rand) string {
	segs := []string{"team", "app", "a", "0", "a.b", "a_b", "a__b", "a--b", "a-b", "*", "**", "", "A", "a-", ".a", "a..b", "a___b", "a_-b", "é", "a b", "a:1"}
	var out []string
	for range r.IntN(3) + 1 {
		var parts []string
		for range r.IntN(3) + 1 {
			parts = append(parts, segs[r.IntN(len(segs))])
		}
		out = append(out, fmt.Sprintf("%q", strings.Join(parts, "/")))
	}
	return "{repositories: [" + strings.Join(out, ", ") + "]}"
}

// genMaxSize is a cache with a size, quoted or not, in every unit and in
// forms the parser refuses.
func genMaxSize(r *rand.Rand) string {
	nums := []string{"0", "00", "1", "7", "50", "1024", "010", "1.5", "-1", ""}
	units := []string{"", "", "B", "KB", "MB", "GB", "TB", "PB", "KiB", "MiB", "GiB", "TiB", "PiB", "gb", "XB", "iB", "EiB", "Gi"}
	v := nums[r.IntN(len(nums))] + []string{"", " "}[r.IntN(2)] + units[r.IntN(len(units))]
	if v == "" || v == " " {
		v = `""`
	} else if r.IntN(2) == 0 || strings.HasSuffix(v, " ") || strings.HasPrefix(v, "-") {
		v = fmt.Sprintf("%q", v)
	}
	return "{cache: {dir: /var/cache/snigate/r, max_size: " + v + "}}"
}
