package admin

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// Route is one route as GET /api/routes shows it.
type Route struct {
	Route     string   `json:"route"`
	Names     []string `json:"names"` // the route's sni patterns
	Mode      string   `json:"mode"`
	Balance   string   `json:"balance"`
	Upstreams []string `json:"upstreams"`
	Default   bool     `json:"default,omitempty"` // it is default_route
	Cert      *Cert    `json:"cert,omitempty"`    // bridge routes: the certificate nodes see
}

// Cert is a serving certificate in force. For a route that mints a leaf
// per name (serve.ca_cert), it is the CA's and Source is "ca".
type Cert struct {
	Source   string    `json:"source"` // "file" (serve.cert) or "ca" (serve.ca_cert)
	Subject  string    `json:"subject"`
	DNSNames []string  `json:"dns_names,omitempty"`
	NotAfter time.Time `json:"not_after"`
}

// ConfigStatus is GET /api/config: the configuration file in force and the
// outcome of the last reload.
type ConfigStatus struct {
	File       string        `json:"file"`
	SHA256     string        `json:"sha256"`    // of the file content in force
	LoadedAt   time.Time     `json:"loaded_at"` // when it was put in force
	Routes     int           `json:"routes"`
	LastReload *ReloadResult `json:"last_reload,omitempty"` // nil: none since start
}

// ReloadResult is the outcome of a reload: POST /api/reload's answer, and
// GET /api/config's last_reload. Errors are the lines `snigate check`
// prints for the same file, one per problem.
type ReloadResult struct {
	Result string    `json:"result"` // "success" or "failure"
	Reason string    `json:"reason"` // what asked for it: SIGHUP, "admin API", "configuration file changed"
	At     time.Time `json:"at"`
	Errors []string  `json:"errors,omitempty"`
}

// Reload results.
const (
	ReloadSuccess = "success"
	ReloadFailure = "failure"
)

// Readiness is GET and POST /api/ready's answer.
type Readiness struct {
	Ready  bool   `json:"ready"`  // what /readyz answers now
	Switch string `json:"switch"` // "on", or "off" after POST {"ready":false}
	Reason string `json:"reason,omitempty"`
}

// runtimeAPI is what the maintenance endpoints need from the gateway.
// ReloadConfig reloads the configuration file now and returns the outcome.
// SetReadySwitch turns the gateway's readiness switch on or off: off fails
// /readyz and takes the gateway out of DNS answers while it keeps serving.
type runtimeAPI interface {
	Routes() []Route
	ConfigStatus() ConfigStatus
	ReloadConfig(ctx context.Context, reason string) ReloadResult
	SetReadySwitch(on bool)
}

// readyRequest is the body of POST /api/ready.
type readyRequest struct {
	Ready *bool `json:"ready"`
}

func (s *Server) runtimeOr503(w http.ResponseWriter) runtimeAPI {
	if s.cfg.Runtime == nil {
		writeError(w, http.StatusServiceUnavailable, "the runtime API is not available in this process")
	}
	return s.cfg.Runtime
}

func (s *Server) listRoutes(w http.ResponseWriter, r *http.Request) {
	rt := s.runtimeOr503(w)
	if rt == nil {
		return
	}
	routes := rt.Routes()
	if routes == nil {
		routes = []Route{}
	}
	writeJSON(w, http.StatusOK, routes)
}

func (s *Server) configStatus(w http.ResponseWriter, r *http.Request) {
	if rt := s.runtimeOr503(w); rt != nil {
		writeJSON(w, http.StatusOK, rt.ConfigStatus())
	}
}

// reload answers 200 with the result when the new configuration is in
// force, 422 with the errors (as `snigate check` prints them) when it was
// rejected and the running one stays.
func (s *Server) reload(w http.ResponseWriter, r *http.Request) {
	rt := s.runtimeOr503(w)
	if rt == nil {
		return
	}
	res := rt.ReloadConfig(r.Context(), "admin API")
	code := http.StatusOK
	if res.Result != ReloadSuccess {
		code = http.StatusUnprocessableEntity
	}
	s.log.Info("reload requested through the admin API", "result", res.Result, "client", r.RemoteAddr)
	writeJSON(w, code, res)
}

// ready is GET /api/ready (the readiness and its reason) and POST
// /api/ready (set the switch).
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		s.setReady(w, r)
		return
	}
	writeJSON(w, http.StatusOK, s.readiness())
}

func (s *Server) setReady(w http.ResponseWriter, r *http.Request) {
	rt := s.runtimeOr503(w)
	if rt == nil {
		return
	}
	var req readyRequest
	if code, err := readJSON(w, r, &req, `{"ready": true|false}`); err != nil {
		writeError(w, code, err.Error())
		return
	}
	if req.Ready == nil {
		writeError(w, http.StatusBadRequest, `request body has no "ready"; want {"ready": true|false}`)
		return
	}
	s.switchOff.Store(!*req.Ready)
	rt.SetReadySwitch(*req.Ready)
	s.log.Info("readiness switch set through the admin API", "ready", *req.Ready, "client", r.RemoteAddr)
	writeJSON(w, http.StatusOK, s.readiness())
}

func (s *Server) version(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Version == nil {
		writeError(w, http.StatusNotFound, "this process does not say which build it is")
		return
	}
	writeJSON(w, http.StatusOK, s.cfg.Version)
}

// readiness is what /readyz would answer now, and why.
func (s *Server) readiness() Readiness {
	rd := Readiness{Ready: true, Switch: "on"}
	if s.switchOff.Load() {
		rd.Switch = "off"
	}
	if s.cfg.ReadyFunc != nil && !s.cfg.ReadyFunc() {
		rd.Ready, rd.Reason = false, s.notReadyReason()
	}
	return rd
}

// notReadyReason is why ReadyFunc says not ready: the switch, else
// "starting" until it has been ready once, else "draining".
func (s *Server) notReadyReason() string {
	switch {
	case s.switchOff.Load():
		return `switched off (POST /api/ready {"ready":false}, snigate ctl ready off); still serving`
	case s.cfg.NotReadyFunc != nil:
		return s.cfg.NotReadyFunc()
	case s.everUp.Load():
		return "draining"
	}
	return "starting"
}

// readJSON decodes a small JSON request body strictly into v; want shows
// the expected body in errors. On failure it returns the HTTP status.
func readJSON(w http.ResponseWriter, r *http.Request, v any, want string) (int, error) {
	data, code, err := readBody(w, r, want)
	if err != nil {
		return code, err
	}
	if err := decodeStrict(data, v); err != nil {
		return http.StatusBadRequest, fmt.Errorf("bad request body: %v; want %s", err, want)
	}
	return 0, nil
}
