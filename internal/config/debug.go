package config

// Debug is the debug: section: diagnostics that are off unless asked for.
type Debug struct {
	// Pprof is debug.pprof: serve Go's profiler (net/http/pprof) under
	// /debug/pprof/ on the admin listener. false (the default): 404.
	Pprof bool
}

// debug parses the debug: section.
func (p *parser) debug(top fields) Debug {
	f := p.mapping(top.get("debug"), "debug", top.keyLine("debug"), "pprof")
	return Debug{Pprof: p.boolAt(f, "pprof")}
}

// boolAt returns the value of name, which must be true or false; false if
// absent or wrong.
func (p *parser) boolAt(f fields, name string) bool {
	n := f.get(name)
	if n == nil {
		return false
	}
	s, ok := p.scalar(n, f.key(name), "true or false")
	if !ok {
		return false
	}
	switch s {
	case "true":
		return true
	case "false":
		return false
	}
	p.errorf(n.Line, f.key(name), "want true or false, got %q", s)
	return false
}
