package deploy

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

const schemaPath = "../docs/snigate.schema.json"

// compileSchema compiles docs/snigate.schema.json as yaml-language-server
// and CI linters would.
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(readFile(t, schemaPath)))
	if err != nil {
		t.Fatalf("%s: %v", schemaPath, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("snigate.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("snigate.schema.json")
	if err != nil {
		t.Fatalf("%s: %v", schemaPath, err)
	}
	return s
}

// validateYAML validates a configuration file's text against s.
func validateYAML(s *jsonschema.Schema, text string) error {
	j, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		return err
	}
	return s.Validate(v)
}

var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)\n```")

// shippedConfigs returns every configuration this tree ships or shows in
// full: the bastion's, the Kubernetes ConfigMaps, and the reference's
// examples that hold a routes list.
func shippedConfigs(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{bastionConfig: string(readFile(t, bastionConfig))}
	for _, dir := range kustomizationDirs(t) {
		b := buildKustomization(t, dir)
		for _, cm := range find[coreConfigMap](b) {
			if cm.Name == configMapName {
				out[dir+" ConfigMap "+cm.Name] = cm.Data[configKey]
			}
		}
	}
	for i, m := range yamlBlock.FindAllStringSubmatch(string(readFile(t, "../docs/configuration.md")), -1) {
		if strings.Contains(m[1], "\nroutes:") {
			out["docs/configuration.md block "+string(rune('1'+i))] = m[1]
		}
	}
	return out
}

// TestSchemaAcceptsShippedConfigs: every configuration the tree ships
// passes docs/snigate.schema.json (those pass `snigate check` too:
// TestExampleConfigsPassSnigateCheck), so the schema refuses nothing
// snigate accepts in them.
func TestSchemaAcceptsShippedConfigs(t *testing.T) {
	s := compileSchema(t)
	configs := shippedConfigs(t)
	if len(configs) < 3 {
		t.Fatalf("found %d configurations, want the bastion's, the ConfigMaps and the reference's", len(configs))
	}
	for name, text := range configs {
		t.Run(name, func(t *testing.T) {
			if err := validateYAML(s, text); err != nil {
				t.Errorf("%v", err)
			}
		})
	}
}

// TestSchemaRefusesMistakes: the mistakes snigate check refuses by key and
// type, the schema refuses too, so an editor underlines them.
func TestSchemaRefusesMistakes(t *testing.T) {
	s := compileSchema(t)
	const base = "listen:\n  tls: [\":443\"]\nroutes:\n  - name: git\n    sni: [git.example.com]\n    mode: splice\n    upstreams: [\"10.2.0.1:443\"]\n"
	bridge := "listen:\n  tls: [\":443\"]\nroutes:\n  - name: r\n    sni: [r.example.com]\n    mode: bridge\n    upstreams: [\"10.1.0.1:443\"]\n" +
		"    serve: {cert: a.crt, key: a.key}\n    upstream_tls: {}\n"
	if err := validateYAML(s, base); err != nil {
		t.Fatalf("the smallest valid file: %v", err)
	}
	if err := validateYAML(s, bridge); err != nil {
		t.Fatalf("a bridge route: %v", err)
	}
	tests := []struct{ name, text string }{
		{name: "unknown top-level key", text: base + "rotues: []\n"},
		{name: "unknown nested key", text: strings.Replace(base, "tls:", "tsl: [\":1\"]\n  tls:", 1)},
		{name: "duration without a unit", text: base + "timeouts:\n  idle: 3600\n"},
		{name: "unknown mode", text: strings.Replace(base, "mode: splice", "mode: sideways", 1)},
		{name: "no routes", text: "listen:\n  tls: [\":443\"]\n"},
		{name: "route without upstreams", text: strings.Replace(base, "    upstreams: [\"10.2.0.1:443\"]\n", "", 1)},
		{name: "serve in splice mode", text: base + "    serve: {cert: a.crt, key: a.key}\n"},
		{name: "bridge without upstream_tls", text: strings.Replace(bridge, "    upstream_tls: {}\n", "", 1)},
		{name: "serve with both pairs", text: strings.Replace(bridge, "{cert: a.crt, key: a.key}", "{cert: a.crt, key: a.key, ca_cert: c.crt, ca_key: c.key}", 1)},
		{name: "proxy_protocol in bridge mode", text: bridge + "    proxy_protocol: v2\n"},
		{name: "upstream without a port", text: strings.Replace(base, "10.2.0.1:443", "10.2.0.1", 1)},
		{name: "max_connections a string", text: base + "max_connections: many\n"},
		{name: "health check unknown", text: base + "    health: {check: https}\n"},
		{name: "expect_status out of range", text: base + "    health: {expect_status: [42]}\n"},
		{name: "http method unknown", text: bridge + "    http: {methods: [FETCH]}\n"},
		{name: "cache without dir", text: bridge + "    http: {cache: {max_size: 1GiB}}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := validateYAML(s, tt.text); err == nil {
				t.Errorf("the schema accepts:\n%s", tt.text)
			}
		})
	}
}

// TestSchemaIsValidJSON: the schema file is plain JSON an editor can load
// from the installed path.
func TestSchemaIsValidJSON(t *testing.T) {
	var v map[string]any
	if err := json.Unmarshal(readFile(t, schemaPath), &v); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Clean(schemaPath)); err != nil {
		t.Fatal(err)
	}
}
