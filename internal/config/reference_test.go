package config

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The reference documents for users: every key the parser accepts must be
// in both.
const (
	referenceDoc = "../../docs/configuration.md"
	schemaFile   = "../../docs/snigate.schema.json"
)

var listIndex = regexp.MustCompile(`\[\d+\]`)

// parsedKeys returns every key the parser allows in the configuration
// text, as "routes[].health.interval", by parsing it with keysFunc set
// (the files it names are not read). Mappings the text leaves out are
// visited too when the parser visits them for their defaults; the text
// should hold every section, as the reference's complete example does.
func parsedKeys(text string) []string {
	set := map[string]bool{}
	p := &parser{file: "snigate.yaml", dir: "/", skipFiles: true, keysFunc: func(path string, allowed []string) {
		for _, k := range allowed {
			key := k
			if path != "" {
				key = path + "." + k
			}
			set[listIndex.ReplaceAllString(key, "[]")] = true
		}
	}}
	parse(p, []byte(text))
	var keys []string
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// completeExample returns the first ```yaml block after the heading
// "## Complete example" of the reference.
func completeExample(t *testing.T, doc string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "\n## Complete example\n")
	if ok {
		_, rest, ok = strings.Cut(rest, "```yaml\n")
	}
	block, _, closed := strings.Cut(rest, "\n```")
	if !ok || !closed {
		t.Fatalf("%s: no ```yaml block under \"## Complete example\"", referenceDoc)
	}
	return block
}

// docSection returns the text under the heading "### `key`" up to the
// next heading, and whether there is one.
func docSection(doc, key string) (string, bool) {
	_, rest, ok := strings.Cut(doc, "\n### `"+key+"`\n")
	if !ok {
		return "", false
	}
	if i := strings.Index(rest, "\n#"); i >= 0 {
		rest = rest[:i]
	}
	return rest, true
}

// TestReferenceListsEveryKey: docs/configuration.md has a section for
// every key internal/config parses, with its type, default, validation and
// an example. A key added to the parser without its documentation fails
// here. The complete example must parse, but for keys the reference
// documents that this build does not parse yet.
func TestReferenceListsEveryKey(t *testing.T) {
	data, err := os.ReadFile(referenceDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	example := completeExample(t, doc)
	for _, key := range parsedKeys(example) {
		section, ok := docSection(doc, key)
		if !ok {
			t.Errorf("%s: no section for %s, which internal/config parses: add \"### `%s`\" with its type, default, validation and an example", referenceDoc, key, key)
			continue
		}
		for _, field := range []string{"- **Type:**", "- **Default:**", "- **Validation:**", "- **Example:**"} {
			if !strings.Contains(section, field) {
				t.Errorf("%s: the section of %s has no %q line", referenceDoc, key, field)
			}
		}
	}
	_, err = Parse("snigate.yaml", []byte(example))
	var list ErrorList
	if err != nil && !asErrorList(err, &list) {
		t.Fatal(err)
	}
	for _, e := range list {
		if strings.Contains(e.Msg, "cannot read") || strings.Contains(e.Msg, "does not exist") {
			continue // the example's files are not on this machine
		}
		if _, documented := docSection(doc, listIndex.ReplaceAllString(e.Key, "[]")); documented && strings.HasPrefix(e.Msg, "unknown key") {
			continue // documented ahead of the parser (another branch adds it)
		}
		t.Errorf("%s: the complete example does not parse: %v", referenceDoc, e)
	}
}

func asErrorList(err error, list *ErrorList) bool {
	l, ok := err.(ErrorList)
	*list = l
	return ok
}

// schemaNode is the part of a JSON Schema the key test reads.
type schemaNode struct {
	Ref                  string                 `json:"$ref"`
	Properties           map[string]*schemaNode `json:"properties"`
	Items                *schemaNode            `json:"items"`
	AdditionalProperties *bool                  `json:"additionalProperties"`
	AnyOf                []*schemaNode          `json:"anyOf"`
	Defs                 map[string]*schemaNode `json:"definitions"`
}

// schemaKeys returns every key path of the schema, as parsedKeys writes
// them, and the paths of objects that allow other keys.
func schemaKeys(root *schemaNode) (keys, open []string) {
	var walk func(n *schemaNode, path string, depth int)
	walk = func(n *schemaNode, path string, depth int) {
		if n == nil || depth > 20 {
			return
		}
		if name, ok := strings.CutPrefix(n.Ref, "#/definitions/"); ok {
			walk(root.Defs[name], path, depth+1)
		}
		for _, alt := range n.AnyOf {
			walk(alt, path, depth+1)
		}
		walk(n.Items, path+"[]", depth+1)
		if n.Properties != nil && (n.AdditionalProperties == nil || *n.AdditionalProperties) {
			open = append(open, path)
		}
		for k, v := range n.Properties {
			key := k
			if path != "" {
				key = path + "." + k
			}
			keys = append(keys, key)
			walk(v, key, depth+1)
		}
	}
	walk(root, "", 0)
	return keys, open
}

// TestSchemaHasEveryKey: docs/snigate.schema.json has a property for every
// key internal/config parses, and, like the parser, allows no other key
// in any mapping.
func TestSchemaHasEveryKey(t *testing.T) {
	doc, err := os.ReadFile(referenceDoc)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	var root schemaNode
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatalf("%s: %v", schemaFile, err)
	}
	keys, open := schemaKeys(&root)
	for _, o := range open {
		t.Errorf("%s: %q allows unknown keys: set \"additionalProperties\": false (the file is strict)", schemaFile, o)
	}
	for _, key := range parsedKeys(completeExample(t, string(doc))) {
		if !slices.Contains(keys, key) {
			t.Errorf("%s: no property for %s, which internal/config parses", schemaFile, key)
		}
	}
	for _, key := range keys {
		if _, ok := docSection(string(doc), key); !ok {
			t.Errorf("%s: %s is not in %s", schemaFile, key, referenceDoc)
		}
	}
}
