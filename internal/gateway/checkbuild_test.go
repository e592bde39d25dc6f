package gateway

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snigate/snigate/internal/certs"
	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/internal/pki"
)

// checkPKI writes, into dir: serve.crt/key for reg.test only, edge.crt/key
// a client certificate (clientAuth), server-only.crt/key a certificate with
// serverAuth only, and ca/ca.crt, ca/ca.key made by `snigate ca init
// --name reg.example.com`.
func checkPKI(t *testing.T, dir string) {
	t.Helper()
	a, err := pki.NewAuthority("check CA")
	must(t, err)
	_, err = a.WriteLeaf(dir, "serve", "reg.test", "reg.test")
	must(t, err)
	_, err = a.WriteLeaf(dir, "edge", "edge")
	must(t, err)
	_, err = a.WriteLeaf(dir, "server-only", "edge", "edge.test")
	must(t, err)
	must(t, certs.InitCA(certs.InitCAConfig{Dir: filepath.Join(dir, "ca"), Names: []string{"reg.example.com"}}))
}

// bridgeYAML is a bridge route with the given sni lines, serve and
// upstream_tls sections.
func bridgeYAML(sni, serve, upstreamTLS string) string {
	return `listen:
  tls: ["127.0.0.1:0"]
routes:
  - name: registry
    sni:
` + sni + `    mode: bridge
    upstreams: ["127.0.0.1:1"]
    serve: ` + serve + `
    upstream_tls: ` + upstreamTLS + `
`
}

// TestCheckRefusesWhatRunCannotServe is issue 13 item 2: each file passed
// `snigate check` and then failed every handshake under `run`. Now the
// builders refuse it, check builds what run builds, and both print the
// same error at the key to change.
func TestCheckRefusesWhatRunCannotServe(t *testing.T) {
	dir := t.TempDir()
	checkPKI(t, dir)
	const ca = "{ca_cert: ca/ca.crt, ca_key: ca/ca.key}"
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{name: "route name outside the serving CA's name constraints",
			yaml: bridgeYAML("      - reg.example.com\n      - other.test\n", ca, "{cert: edge.crt, key: edge.key}"),
			want: []string{"snigate.yaml:7: routes[0].sni[1]: CA ca/ca.crt is constrained to [reg.example.com] (each name and exactly one label below it); " +
				"name other.test is outside them; add it with snigate ca init --name other.test (and give nodes the new ca.crt)"}},
		{name: "wildcard route name two labels below the CA's name",
			yaml: bridgeYAML("      - \"*.eu.reg.example.com\"\n", ca, "{}"),
			want: []string{"snigate.yaml:6: routes[0].sni[0]: CA ca/ca.crt is constrained to [reg.example.com] (each name and exactly one label below it); " +
				"name *.eu.reg.example.com is outside them; add it with snigate ca init --name eu.reg.example.com (and give nodes the new ca.crt)"}},
		{name: "static serve.cert that does not cover the route's names",
			yaml: bridgeYAML("      - reg.test\n      - \"*.reg.test\"\n      - other.test\n", "\n      cert: serve.crt\n      key: serve.key", "{}"),
			want: []string{"snigate.yaml:12: routes[0].serve.cert: certificate serve.crt does not cover sni *.reg.test other.test (its DNS names: reg.test); " +
				"nodes would refuse it: issue it with these names as SANs (a wildcard route name needs the same wildcard SAN), or remove them from the route's sni"}},
		{name: "upstream_tls.cert without clientAuth",
			yaml: bridgeYAML("      - reg.test\n", "{cert: serve.crt, key: serve.key}", "\n      cert: server-only.crt\n      key: server-only.key"),
			want: []string{"snigate.yaml:11: routes[0].upstream_tls.cert: certificate server-only.crt has extended key usage [serverAuth], without clientAuth: " +
				"the upstream will refuse it as a client certificate; issue the edge certificate with extendedKeyUsage clientAuth (or none at all)"}},
		{name: "one error per route, every route",
			yaml: bridgeYAML("      - other.test\n", "{cert: serve.crt, key: serve.key}", "{}") + `  - name: minted
    sni: [other.example.com]
    mode: bridge
    upstreams: ["127.0.0.1:1"]
    serve: ` + ca + `
    upstream_tls: {}
`,
			want: []string{
				"snigate.yaml:9: routes[0].serve.cert: certificate serve.crt does not cover sni other.test (its DNS names: reg.test); " +
					"nodes would refuse it: issue it with these names as SANs (a wildcard route name needs the same wildcard SAN), or remove them from the route's sni",
				"snigate.yaml:12: routes[1].sni[0]: CA ca/ca.crt is constrained to [reg.example.com] (each name and exactly one label below it); " +
					"name other.example.com is outside them; add it with snigate ca init --name other.example.com (and give nodes the new ca.crt)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(dir, "snigate.yaml")
			must(t, os.WriteFile(file, []byte(tt.yaml), 0o644))
			var out bytes.Buffer
			checkErr := Check(t.Context(), file, false, &out)
			if got := errorLines(t, checkErr, dir); !slices.Equal(got, tt.want) {
				t.Errorf("check errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if out.Len() != 0 {
				t.Errorf("check printed %q for a file it refuses", out.String())
			}
			_, runErr := New(Options{ConfigFile: file, Logger: slog.New(slog.DiscardHandler)})
			if runErr == nil || runErr.Error() != checkErr.Error() {
				t.Errorf("run refuses the file with\n%v\ncheck with\n%v\nwant the same error", runErr, checkErr)
			}
		})
	}
}

// errorLines returns the lines of a config.ErrorList with dir/ removed.
func errorLines(t *testing.T, err error, dir string) []string {
	t.Helper()
	var list config.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error %T is not a config.ErrorList: %v", err, err)
	}
	return strings.Split(strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), ""), "\n")
}

// TestCheckAcceptsWhatRunServes: the same PKI, used right, passes check.
func TestCheckAcceptsWhatRunServes(t *testing.T) {
	dir := t.TempDir()
	checkPKI(t, dir)
	yaml := bridgeYAML("      - reg.test\n", "{cert: serve.crt, key: serve.key}", "{cert: edge.crt, key: edge.key}") + `  - name: minted
    sni: [reg.example.com, "*.reg.example.com"]
    mode: bridge
    upstreams: ["127.0.0.1:1"]
    serve: {ca_cert: ca/ca.crt, ca_key: ca/ca.key}
    upstream_tls: {}
`
	file := filepath.Join(dir, "snigate.yaml")
	must(t, os.WriteFile(file, []byte(yaml), 0o644))
	var out bytes.Buffer
	if err := Check(t.Context(), file, false, &out); err != nil {
		t.Fatalf("Check = %v", err)
	}
	if !strings.Contains(out.String(), "configuration OK (2 routes, 2 upstreams)") {
		t.Errorf("output %q", out.String())
	}
}
