package admin

import (
	"net/http"
	"net/http/pprof"
)

// pprof serves Go's profiler under /debug/pprof/ while PprofFunc says so
// (debug.pprof: true), and 404 otherwise: the profiles show memory and
// goroutine stacks, and a CPU profile costs CPU, so they are off unless
// the configuration asks. A profile must finish within
// DefaultWriteTimeout (ask for ?seconds=20, not 30).
func (s *Server) pprof() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.PprofFunc == nil || !s.cfg.PprofFunc() {
			writeError(w, http.StatusNotFound, "pprof is off: set debug.pprof: true in the configuration and reload to serve /debug/pprof/")
			return
		}
		mux.ServeHTTP(w, r)
	})
}
