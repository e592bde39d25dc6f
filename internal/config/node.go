package config

import (
	"fmt"
	"net/netip"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// parser walks the YAML node tree and collects every error it finds.
type parser struct {
	file string    // for messages
	dir  string    // absolute directory of file, for relative paths
	now  time.Time // to tell expired certificates
	errs ErrorList // everything found so far

	skipFiles bool // do not read the files the configuration names

	// keysFunc, when set, is told the keys each mapping allows as it is
	// parsed (path "" is the top); the reference test lists every key so.
	keysFunc func(path string, allowed []string)
	// localAddrsFunc, when set, gives the host's interface addresses
	// instead of the system (tests give a fixed set).
	localAddrsFunc func() []netip.Addr

	errKeys   map[string]bool // keys with an error
	errWithin map[string]bool // keys with an error, and every key holding one

	lines map[string]int // line of every key and list item seen, for Config.ErrorAt
}

// seen records the line of key, for errors found after parsing.
func (p *parser) seen(key string, line int) {
	if p.lines == nil {
		p.lines = map[string]int{}
	}
	p.lines[key] = line
}

// errorf records an error at line for the dotted key path key.
func (p *parser) errorf(line int, key, format string, args ...any) {
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)})
	if p.errKeys == nil {
		p.errKeys, p.errWithin = map[string]bool{}, map[string]bool{}
	}
	p.errKeys[key] = true
	for k := key; k != ""; k = parentKey(k) {
		p.errWithin[k] = true
	}
}

// hasErrorAt reports whether an error was already recorded for key, inside
// it or for a mapping or list that holds it, so that "required" does not
// repeat a more precise message.
func (p *parser) hasErrorAt(key string) bool {
	if p.errWithin[key] {
		return true
	}
	for k := parentKey(key); k != ""; k = parentKey(k) {
		if p.errKeys[k] {
			return true
		}
	}
	return false
}

// parentKey returns the key holding key: "routes[0]" for "routes[0].sni",
// "routes" for "routes[0]", "" at the top.
func parentKey(key string) string {
	i := strings.LastIndexAny(key, ".[")
	if i < 0 {
		return ""
	}
	return key[:i]
}

// fields is a mapping that passed the strictness checks: every key is
// allowed and appears once.
type fields struct {
	path string                // dotted path of the mapping, "" at the top
	line int                   // line of the mapping, for "required" errors
	vals map[string]*yaml.Node // values by key, aliases resolved; null values left out
	keys map[string]*yaml.Node // key nodes, for errors about a key itself
}

// key returns the dotted path of name inside f.
func (f fields) key(name string) string {
	if f.path == "" {
		return name
	}
	return f.path + "." + name
}

// get returns the value of name, or nil if it is absent or null.
func (f fields) get(name string) *yaml.Node { return f.vals[name] }

// keyLine returns the line of the key name, or of the mapping if it is absent.
func (f fields) keyLine(name string) int {
	if k, ok := f.keys[name]; ok {
		return k.Line
	}
	return f.line
}

// mapping checks that n is a mapping whose keys are all in allowed, each
// once, and returns its values. A null n is an empty mapping. Problems are
// recorded; the result then holds what could be used.
func (p *parser) mapping(n *yaml.Node, path string, line int, allowed ...string) fields {
	f := fields{path: path, line: line, vals: map[string]*yaml.Node{}, keys: map[string]*yaml.Node{}}
	if p.keysFunc != nil {
		p.keysFunc(path, allowed)
	}
	n = resolve(n)
	if isNull(n) {
		return f
	}
	f.line = n.Line
	if n.Kind != yaml.MappingNode {
		p.errorf(n.Line, path, "want a mapping with keys %s, got %s", strings.Join(allowed, ", "), describe(n))
		return f
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		p.field(&f, resolve(n.Content[i]), resolve(n.Content[i+1]), allowed)
	}
	return f
}

// field adds one key/value pair to f after checking the key.
func (p *parser) field(f *fields, k, v *yaml.Node, allowed []string) {
	if k.Tag == "!!merge" {
		p.errorf(k.Line, f.path, "merge keys (<<) are not supported: write the keys out")
		return
	}
	if k.Kind != yaml.ScalarNode {
		p.errorf(k.Line, f.path, "want a plain key (one of %s), got %s", strings.Join(allowed, ", "), describe(k))
		return
	}
	name := k.Value
	if first, dup := f.keys[name]; dup {
		p.errorf(k.Line, f.key(name), "duplicate key (first at line %d)", first.Line)
		return
	}
	if !contains(allowed, name) {
		p.errorf(k.Line, f.key(name), "unknown key%s; allowed here: %s", suggest(name, allowed), strings.Join(allowed, ", "))
		return
	}
	f.keys[name] = k
	p.seen(f.key(name), k.Line)
	if !isNull(v) {
		f.vals[name] = v
	}
}

// resolve follows an alias to the node it names, keeping the line of the
// alias so that errors point where the value is used.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && n.Alias != nil && i < 32; i++ {
		c := *n.Alias
		c.Line = n.Line
		n = &c
	}
	return n
}

// isNull reports whether n is absent or an explicit null ("key:" with no value).
func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// describe says what n is, for "got ..." in messages.
func describe(n *yaml.Node) string {
	switch {
	case isNull(n):
		return "nothing"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.AliasNode:
		return "an alias"
	}
	return quoteShort(n.Value)
}

// maxQuoted is how much of a value a message quotes: a file that is not
// YAML at all parses as one long text, not worth printing whole.
const maxQuoted = 60

// quoteShort quotes s, or its start and its length when it is long.
func quoteShort(s string) string {
	if len(s) <= maxQuoted {
		return fmt.Sprintf("%q", s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:cut], len(s))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
