package config

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// item is one element of a list, with its dotted path ("listen.tls[1]").
type item struct {
	node *yaml.Node
	key  string
}

// scalar returns the text of a scalar value, or records that one was
// wanted. want completes "want ...", e.g. `a duration such as "3s"`.
func (p *parser) scalar(n *yaml.Node, key, want string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		p.errorf(n.Line, key, "want %s, got %s", want, describe(n))
		return "", false
	}
	return n.Value, true
}

// stringAt returns the string value of name, "" if absent.
func (p *parser) stringAt(f fields, name, want string) string {
	n := f.get(name)
	if n == nil {
		return ""
	}
	s, _ := p.scalar(n, f.key(name), want)
	return s
}

// enumAt returns the value of name, which must be one of allowed; def if
// absent or wrong.
func (p *parser) enumAt(f fields, name, def string, allowed ...string) string {
	n := f.get(name)
	if n == nil {
		return def
	}
	shown := make([]string, len(allowed))
	for i, a := range allowed {
		shown[i] = a
		if a == "" {
			shown[i] = `""`
		}
	}
	want := "one of " + strings.Join(shown, ", ")
	s, ok := p.scalar(n, f.key(name), want)
	if !ok {
		return def
	}
	if !contains(allowed, s) {
		p.errorf(n.Line, f.key(name), "want %s, got %q%s", want, s, suggest(s, allowed))
		return def
	}
	return s
}

// durationAt returns the duration value of name (greater than zero), def
// if absent or wrong.
func (p *parser) durationAt(f fields, name string, def time.Duration) time.Duration {
	n := f.get(name)
	if n == nil {
		return def
	}
	d, ok := p.duration(n, f.key(name), def)
	if !ok {
		return def
	}
	return d
}

// duration parses a Go duration such as "3s" or "1h30m", greater than zero.
func (p *parser) duration(n *yaml.Node, key string, example time.Duration) (time.Duration, bool) {
	want := fmt.Sprintf("a duration such as %q", shortDuration(example))
	s, ok := p.scalar(n, key, want)
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		p.errorf(n.Line, key, "want %s, got %q", want, s)
		return 0, false
	}
	if d <= 0 {
		p.errorf(n.Line, key, "want a duration greater than 0 such as %q, got %q", shortDuration(example), s)
		return 0, false
	}
	return d, true
}

// shortDuration prints d without zero minutes and seconds: "1h", not "1h0m0s".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2] // "1h0m0s" -> "1h0m", "5m0s" -> "5m"
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2] // "1h0m" -> "1h"
	}
	return s
}

// intAt returns the integer value of name, at least lo; def if absent or wrong.
func (p *parser) intAt(f fields, name string, def, lo int) int {
	n := f.get(name)
	if n == nil {
		return def
	}
	i, ok := p.integer(n, f.key(name), lo, 0)
	if !ok {
		return def
	}
	return i
}

// integer parses an integer between lo and hi (hi 0: no upper bound).
func (p *parser) integer(n *yaml.Node, key string, lo, hi int) (int, bool) {
	want := fmt.Sprintf("an integer of at least %d", lo)
	if hi > 0 {
		want = fmt.Sprintf("an integer from %d to %d", lo, hi)
	}
	s, ok := p.scalar(n, key, want)
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(s)
	if n.Tag == "!!int" {
		err = n.Decode(&i) // also 0x1f, 0o17, 1_000
	}
	if err != nil {
		p.errorf(n.Line, key, "want %s, got %q", want, s)
		return 0, false
	}
	if i < lo || hi > 0 && i > hi {
		p.errorf(n.Line, key, "want %s, got %d", want, i)
		return 0, false
	}
	return i, true
}

// listAt returns the items of the list name, nil if absent or not a list.
// example completes "want a list such as ...".
func (p *parser) listAt(f fields, name, example string) []item {
	n := f.get(name)
	if n == nil {
		return nil
	}
	key := f.key(name)
	if n.Kind != yaml.SequenceNode {
		p.errorf(n.Line, key, "want a list such as %s, got %s", example, describe(n))
		return nil
	}
	items := make([]item, 0, len(n.Content))
	for i, c := range n.Content {
		c = resolve(c)
		items = append(items, item{node: c, key: fmt.Sprintf("%s[%d]", key, i)})
		p.seen(items[i].key, c.Line)
	}
	return items
}

// pathAt returns the file name value of name made absolute against the
// configuration file's directory; "" if absent.
func (p *parser) pathAt(f fields, name string) string {
	s := p.stringAt(f, name, "a file name")
	if s == "" || filepath.IsAbs(s) {
		return s
	}
	return filepath.Join(p.dir, s)
}

// dupChecker reports values listed twice, by their canonical form.
type dupChecker map[string]int

// check records v at line and reports whether it was new; if not, the
// error says where it was first listed.
func (d dupChecker) check(p *parser, it item, v string) bool {
	if first, ok := d[v]; ok {
		p.errorf(it.node.Line, it.key, "%q is listed twice (first at line %d)", v, first)
		return false
	}
	d[v] = it.node.Line
	return true
}
