package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// notationFiles writes, in dir, a trust store "truststore" whose store
// ca:test holds serve.crt (testPKI's), and the trust policies the tests
// name.
func notationFiles(t *testing.T, dir string) {
	t.Helper()
	crt, err := os.ReadFile(filepath.Join(dir, "serve.crt"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"truststore/x509/ca/test/root.pem": string(crt),
		"badstore/x509/ca/test/root.pem":   "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
		"emptystore/x509/ca/test/README":   "",
		"policy.json":                      `{"version":"1.0","trustPolicies":[{"name":"p","registryScopes":["*"],"signatureVerification":{"level":"strict"},"trustStores":["ca:test"],"trustedIdentities":["*"]}]}`,
		"garbage.json":                     "{version: 1",
		"v2.json":                          `{"version":"2.0","trustPolicies":[]}`,
		"none.json":                        `{"version":"1.0","trustPolicies":[]}`,
		"badtype.json":                     `{"version":"1.0","trustPolicies":[{"name":"p","trustStores":["x509:test"]}]}`,
		"otherstore.json":                  `{"version":"1.0","trustPolicies":[{"name":"p","trustStores":["ca:prod"]}]}`,
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// emptystore's store holds no certificate.
	if err := os.Remove(filepath.Join(dir, "emptystore/x509/ca/test/README")); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyNotation: verify.notation's trust_store and trust_policy are
// parsed (before, check refused the key: "not verified by this version").
func TestVerifyNotation(t *testing.T) {
	dir := t.TempDir()
	testPKI(t, dir)
	notationFiles(t, dir)
	c, err := Parse(filepath.Join(dir, "snigate.yaml"), []byte(minimalBridge+
		"    http: {verify: {notation: {trust_store: truststore, trust_policy: policy.json}}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := &Verify{Mode: VerifyEnforce, Notation: &VerifyNotation{TrustStore: filepath.Join(dir, "truststore"), TrustPolicy: filepath.Join(dir, "policy.json")}}
	if got := c.Routes[0].HTTP.Verify; !reflect.DeepEqual(got, want) {
		t.Errorf("Verify = %+v, want %+v", got, want)
	}
}

func TestVerifyNotationErrors(t *testing.T) {
	dir := t.TempDir()
	testPKI(t, dir)
	notationFiles(t, dir)
	for _, tc := range verifyNotationErrorCases {
		t.Run(tc.name, func(t *testing.T) { wantErrorPrefixesInDir(t, dir, tc.yaml, tc.want) })
	}
}

// notationYAML is a bridge route verifying with notation's trust store
// and trust policy at these paths.
func notationYAML(store, policy string) string {
	return minimalBridge + "    http: {verify: {notation: {trust_store: " + store + ", trust_policy: " + policy + "}}}\n"
}

// verifyNotationErrorCases are configurations of http.verify.notation
// parsed in notationFiles' directory and the errors they give.
var verifyNotationErrorCases = []struct {
	name, yaml string
	want       []string
}{
	{name: "keys required", yaml: minimalBridge + "    http: {verify: {notation: {}}}\n", want: []string{
		"snigate.yaml:10: routes[0].http.verify.notation.trust_store: required",
		"snigate.yaml:10: routes[0].http.verify.notation.trust_policy: required",
	}},
	{name: "unknown key", yaml: minimalBridge + "    http: {verify: {notation: {trust_store: truststore, trust_policy: policy.json, plugins: x}}}\n", want: []string{
		"snigate.yaml:10: routes[0].http.verify.notation.plugins: unknown key; allowed here: trust_store, trust_policy",
	}},
	{name: "store and policy missing: both said at once", yaml: notationYAML("nostore", "nopolicy.json"), want: []string{
		"snigate.yaml:10: routes[0].http.verify.notation.trust_store: cannot read the trust store nostore: no such file or directory",
		"snigate.yaml:10: routes[0].http.verify.notation.trust_policy: cannot read nopolicy.json: no such file or directory",
	}},
	{name: "store missing", yaml: notationYAML("nostore", "policy.json"), want: []string{
		"snigate.yaml:10: routes[0].http.verify.notation.trust_store: cannot read the trust store nostore: no such file or directory",
	}},
	{name: "store is a file", yaml: notationYAML("policy.json", "policy.json"), want: []string{
		"snigate.yaml:10: routes[0].http.verify.notation.trust_store: cannot read the trust store policy.json: not a directory",
	}},
	{name: "policy missing", yaml: notationYAML("truststore", "missing.json"), want: []string{
		"snigate.yaml:10: routes[0].http.verify.notation.trust_policy: cannot read missing.json: no such file or directory",
	}},
	{name: "policy not JSON", yaml: notationYAML("truststore", "garbage.json"), want: []string{
		"snigate.yaml:10: routes[0].http.verify.notation.trust_policy: garbage.json is not a notation trust policy (JSON",
	}},
	{name: "policy version", yaml: notationYAML("truststore", "v2.json"), want: []string{
		`snigate.yaml:10: routes[0].http.verify.notation.trust_policy: v2.json: version "2.0", want "1.0"`,
	}},
	{name: "no statements", yaml: notationYAML("truststore", "none.json"), want: []string{
		"snigate.yaml:10: routes[0].http.verify.notation.trust_policy: none.json: no trustPolicies",
	}},
	{name: "trust store type", yaml: notationYAML("truststore", "badtype.json"), want: []string{
		`snigate.yaml:10: routes[0].http.verify.notation.trust_policy: badtype.json: trust policy "p": trust store "x509:test": want TYPE:NAME`,
	}},
	{name: "named store absent", yaml: notationYAML("truststore", "otherstore.json"), want: []string{
		`snigate.yaml:10: routes[0].http.verify.notation.trust_store: the trust policy names the trust store "ca:prod": cannot read truststore/x509/ca/prod`,
	}},
	{name: "malformed certificate", yaml: notationYAML("badstore", "policy.json"), want: []string{
		`snigate.yaml:10: routes[0].http.verify.notation.trust_store: trust store "ca:test": badstore/x509/ca/test/root.pem is not a PEM certificate`,
	}},
	{name: "no certificate", yaml: notationYAML("emptystore", "policy.json"), want: []string{
		`snigate.yaml:10: routes[0].http.verify.notation.trust_store: the trust policy names the trust store "ca:test": emptystore/x509/ca/test holds no certificate`,
	}},
}

// wantErrorPrefixesInDir parses yaml in dir and checks that its errors,
// with dir cut from their paths, begin with want's in order.
func wantErrorPrefixesInDir(t *testing.T, dir, yaml string, want []string) {
	t.Helper()
	got := parseInDir(t, dir, yaml)
	for i := range got {
		got[i] = strings.ReplaceAll(got[i], dir+"/", "")
	}
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = strings.HasPrefix(got[i], want[i])
	}
	if !ok {
		t.Errorf("errors:\n%s\nwant (prefixes):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
