package config

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

const emptyFile = "the file is empty: want a mapping with at least listen.tls and routes"

var topKeys = []string{"listen", "timeouts", "max_connections", "max_connections_per_client", "max_handshakes", "dns", "default_route", "routes", "debug", "log"}

// Load reads the configuration file at path and parses it (see Parse).
func Load(path string) (*Config, error) {
	data, err := readConfig(path)
	if err != nil {
		return nil, ErrorList{{File: path, Msg: "cannot read the configuration: " + unwrapPath(err).Error()}}
	}
	return Parse(path, data)
}

// StdinName is the file name of a configuration read from standard input
// (`snigate check -c -`), in messages; relative file names in it are
// relative to the working directory.
const StdinName = "<stdin>"

// maxConfig is the largest configuration file read.
const maxConfig = 16 << 20

// LoadReader reads a configuration from r (standard input) and parses it
// as the file name, StdinName for `check -c -` (see Parse).
func LoadReader(name string, r io.Reader) (*Config, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxConfig+1))
	switch {
	case err != nil:
		return nil, ErrorList{{File: name, Msg: "cannot read the configuration: " + err.Error()}}
	case len(data) > maxConfig:
		return nil, ErrorList{{File: name, Msg: "cannot read the configuration: larger than 16 MiB"}}
	}
	return Parse(name, data)
}

// readConfig reads path, which must be a regular file of a sane size.
func readConfig(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if fi.Size() > maxConfig {
		return nil, errors.New("larger than 16 MiB")
	}
	return os.ReadFile(path)
}

// LoadWithoutFiles is Load without reading the certificate and key files
// the configuration names: for readers that need only the routed names and
// DNS settings (the CoreDNS plugin), on hosts without the gateway's keys.
func LoadWithoutFiles(path string) (*Config, error) {
	data, err := readConfig(path)
	if err != nil {
		return nil, ErrorList{{File: path, Msg: "cannot read the configuration: " + unwrapPath(err).Error()}}
	}
	return parse(&parser{file: path, dir: absDir(path), now: time.Now(), skipFiles: true}, data)
}

// Parse parses and validates the configuration in data. file is the name
// used in error messages; relative file names in the configuration are
// resolved against its directory, and the files they name are read and
// checked. The error, if any, is an ErrorList of every problem found.
func Parse(file string, data []byte) (*Config, error) {
	return parse(&parser{file: file, dir: absDir(file), now: time.Now()}, data)
}

func parse(p *parser, data []byte) (*Config, error) {
	c := p.parse(data)
	if len(p.errs) > 0 {
		p.errs.sortByLine()
		return nil, p.errs
	}
	return c, nil
}

// absDir returns the absolute directory of file.
func absDir(file string) string {
	dir := filepath.Dir(file)
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// parse walks the document; c is nil if there is no usable document.
func (p *parser) parse(data []byte) *Config {
	root := p.document(data)
	if root == nil {
		return nil
	}
	top := p.mapping(root, "", root.Line, topKeys...)
	c := &Config{File: p.file}
	var listen fields
	c.Listen, listen = p.listen(top)
	c.Timeouts = p.timeouts(top)
	p.limits(top, c)
	c.DNS = p.dns(top, listen, c.Listen)
	c.Routes = p.routes(top)
	p.upstreamLoops(c)
	c.DefaultRoute = p.defaultRoute(top, c.Routes)
	c.Debug = p.debug(top)
	c.Log = p.log(top)
	c.lines = p.lines
	return c
}

// document decodes data as exactly one YAML document and returns its root
// node, nil (with the error recorded) if there is none.
func (p *parser) document(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	err := dec.Decode(&doc)
	switch {
	case errors.Is(err, io.EOF) || err == nil && isNull(resolve(doc.Content[0])):
		p.errorf(1, "", emptyFile)
		return nil
	case err != nil:
		p.yamlError(err, data)
		return nil
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		p.errorf(next.Line, "", "a second YAML document (after ---): want exactly one")
	} else if !errors.Is(err, io.EOF) {
		p.yamlError(err, data)
	}
	root := resolve(doc.Content[0])
	switch {
	case root.Kind == yaml.ScalarNode:
		p.errorf(root.Line, "", "not a snigate configuration: want a YAML mapping with keys %s, got the text %s; is this the right file?", strings.Join(topKeys, ", "), describe(root))
		return nil
	case root.Kind != yaml.MappingNode:
		p.errorf(root.Line, "", "want a mapping with keys %s, got %s", strings.Join(topKeys, ", "), describe(root))
		return nil
	}
	return root
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
var yamlAnchor = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)

// yamlError records an error of the YAML parser at the line it names.
func (p *parser) yamlError(err error, data []byte) {
	msg := err.Error()
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	if m := yamlAnchor.FindStringSubmatch(msg); m != nil {
		line = lineOf(data, "*"+m[1])
	} else {
		line = fixYAMLLine(data, line)
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	p.errorf(line, "", "not valid YAML: %s", msg)
}

// fixYAMLLine returns the 1-based line of a syntax error that yaml.v3
// reported at line. yaml.v3 reports scanner errors 1-based but parser
// errors 0-based, and leaves "line 0" out: if the first reported lines
// parse on their own, the error is on the next line.
func fixYAMLLine(data []byte, reported int) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	if reported >= len(lines) {
		return max(reported, 1)
	}
	if parses(bytes.Join(lines[:reported], nil)) {
		return reported + 1
	}
	return reported
}

// parses reports whether every YAML document in data parses.
func parses(data []byte) bool {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		switch err := dec.Decode(&n); {
		case errors.Is(err, io.EOF):
			return true
		case err != nil:
			return false
		}
	}
}

// lineOf returns the 1-based line of the first occurrence of s, 1 if none.
func lineOf(data []byte, s string) int {
	i := bytes.Index(data, []byte(s))
	if i < 0 {
		return 1
	}
	return bytes.Count(data[:i], []byte("\n")) + 1
}
