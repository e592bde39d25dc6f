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
	return Debug{Pprof: p.boolAt(f, "pprof", false)}
}
