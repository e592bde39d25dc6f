package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/snigate/snigate/upstream"
)

// MaxBodyBytes bounds a runtime API request body; {"state":"maint"} needs 17.
const MaxBodyBytes = 4 << 10

// ErrNotFound is what the gateway's SetUpstreamState wraps for a route it
// does not have or an upstream the route does not have; the API answers 404.
// An error wrapping upstream.ErrUnknownUpstream is a 404 as well.
var ErrNotFound = errors.New("not found")

// upstreamAPI is what the runtime API needs from the gateway: the status of
// every upstream of every route, and setting one upstream's state.
// SetUpstreamState returns the upstream's status after the change, or an
// error wrapping ErrNotFound (or upstream.ErrUnknownUpstream) when the route
// or upstream does not exist.
type upstreamAPI interface {
	Upstreams() []upstream.Status
	SetUpstreamState(route, upstream string, s upstream.State) (upstream.Status, error)
}

// validStates lists the states in the order the API documents them.
var validStates = []upstream.State{upstream.StateReady, upstream.StateDrain, upstream.StateMaint}

// stateRequest is the body of POST /api/upstreams/{route}/{upstream}.
type stateRequest struct {
	State *string `json:"state"`
}

// errorBody is every error response of the admin listener.
type errorBody struct {
	Error string `json:"error"`
}

func (s *Server) listUpstreams(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Upstreams == nil {
		writeError(w, http.StatusServiceUnavailable, "the runtime API is not available in this process")
		return
	}
	st := s.cfg.Upstreams.Upstreams()
	if st == nil {
		st = []upstream.Status{} // "[]", never "null"
	}
	writeJSON(w, http.StatusOK, st)
}

// setUpstream handles POST /api/upstreams/{route}/{upstream}. The upstream
// is a host:port; its colon may be sent verbatim or escaped as %3A (an IPv6
// address's brackets as %5B %5D): the mux unescapes path values.
func (s *Server) setUpstream(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Upstreams == nil {
		writeError(w, http.StatusServiceUnavailable, "the runtime API is not available in this process")
		return
	}
	route, addr := r.PathValue("route"), r.PathValue("upstream")
	state, code, err := readState(w, r)
	if err != nil {
		writeError(w, code, err.Error())
		return
	}
	st, err := s.cfg.Upstreams.SetUpstreamState(route, addr, state)
	if err != nil {
		s.setFailed(w, route, addr, err)
		return
	}
	s.cfg.Metrics.stateChanged(route, string(state))
	s.log.Info("upstream state set through the admin API",
		"route", route, "upstream", addr, "state", state, "client", r.RemoteAddr)
	writeJSON(w, http.StatusOK, st)
}

// setFailed maps a SetUpstreamState error to a response.
func (s *Server) setFailed(w http.ResponseWriter, route, addr string, err error) {
	switch {
	case errors.Is(err, ErrNotFound), errors.Is(err, upstream.ErrUnknownUpstream):
		writeError(w, http.StatusNotFound, fmt.Sprintf("%v; GET /api/upstreams lists the routes and their upstreams", err))
	case errors.Is(err, upstream.ErrInvalidState):
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%v; want one of %s", err, stateList()))
	default:
		s.log.Error("set upstream state", "route", route, "upstream", addr, "err", err)
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("set state of %s in route %s: %v", addr, route, err))
	}
}

// readState decodes and validates the request body. On failure it returns
// the HTTP status and an error message for the client.
func readState(w http.ResponseWriter, r *http.Request) (upstream.State, int, error) {
	data, code, err := readBody(w, r, wantBody())
	if err != nil {
		return "", code, err
	}
	var req stateRequest
	if err := decodeStrict(data, &req); err != nil {
		return "", http.StatusBadRequest, fmt.Errorf("bad request body: %v; want %s", err, wantBody())
	}
	if req.State == nil {
		return "", http.StatusBadRequest, fmt.Errorf(`request body has no "state"; want %s`, wantBody())
	}
	state, err := upstream.ParseState(*req.State)
	if err != nil {
		return "", http.StatusBadRequest, fmt.Errorf("unknown state %q; want one of %s", *req.State, stateList())
	}
	return state, 0, nil
}

// readBody reads a JSON request body of at most MaxBodyBytes; want shows
// the expected body in errors. On failure it returns the HTTP status.
func readBody(w http.ResponseWriter, r *http.Request, want string) ([]byte, int, error) {
	if ct := r.Header.Get("Content-Type"); !isJSON(ct) {
		return nil, http.StatusUnsupportedMediaType, fmt.Errorf("Content-Type %q: want application/json (curl -H 'Content-Type: application/json'), with a body such as %s", ct, want)
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("request body larger than %d bytes; want %s", MaxBodyBytes, want)
	case err != nil:
		return nil, http.StatusBadRequest, fmt.Errorf("read request body: %v", err)
	case len(bytes.TrimSpace(data)) == 0:
		return nil, http.StatusBadRequest, fmt.Errorf("empty request body; want %s", want)
	}
	return data, 0, nil
}

// decodeStrict decodes exactly one JSON object with no unknown fields.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("unexpected data after the JSON object")
	}
	return nil
}

func stateList() string {
	names := make([]string, len(validStates))
	for i, st := range validStates {
		names[i] = string(st)
	}
	return strings.Join(names, ", ")
}

func wantBody() string {
	names := make([]string, len(validStates))
	for i, st := range validStates {
		names[i] = fmt.Sprintf("%q", st)
	}
	return `{"state": ` + strings.Join(names, "|") + "}"
}

// allow answers 405 with an Allow header unless the request's method is one
// of methods (GET implies HEAD).
func allow(h http.Handler, methods ...string) http.Handler {
	if slices.Contains(methods, http.MethodGet) {
		methods = append(methods, http.MethodHead)
	}
	allowed := strings.Join(methods, ", ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !slices.Contains(methods, r.Method) {
			w.Header().Set("Allow", allowed)
			writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s; use %s", r.Method, r.URL.Path, allowed))
			return
		}
		h.ServeHTTP(w, r)
	})
}

func notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotFound, fmt.Sprintf("no endpoint %s; the admin listener serves /healthz, /readyz, /metrics, GET /api/upstreams, POST /api/upstreams/{route}/{upstream}, GET /api/answers, GET /api/routes, GET /api/config, GET /api/version, POST /api/reload, GET and POST /api/ready, and /debug/pprof/ when debug.pprof is true", r.URL.Path))
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, errorBody{Error: msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil { // only unencodable types; a bug here, not the client's
		code, data = http.StatusInternalServerError, []byte(`{"error": "encode response"}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(append(data, '\n'))
}
