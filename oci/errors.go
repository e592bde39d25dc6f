package oci

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
)

// OCI distribution error codes the gateway answers with itself.
const (
	CodeDenied      = "DENIED"      // refused by the route's policy, or by the registry to a fill
	CodeUnavailable = "UNAVAILABLE" // no upstream could answer
	CodeUnsupported = "UNSUPPORTED" // a request the gateway cannot forward (a malformed body)
)

// Codes lists the codes above.
var Codes = []string{CodeDenied, CodeUnavailable, CodeUnsupported}

// ErrorBody is the distribution specification's error body.
type ErrorBody struct {
	Errors []Error `json:"errors"`
}

// Error is one entry of an ErrorBody.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// WriteError answers w with status and an OCI error body carrying code
// (one of the Code constants) and msg, as JSON with its Content-Length.
func WriteError(w http.ResponseWriter, status int, code, msg string) {
	body, _ := json.Marshal(ErrorBody{Errors: []Error{{Code: code, Message: msg}}})
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// ErrNoUpstream: every upstream of the route is down, draining or in
// maintenance; the node gets 503. It is declared here, in the leaf, and is
// the pool's own sentinel (upstream.ErrNoHealthy is this value), so that
// every producer and every caller's errors.Is agree on one error.
var ErrNoUpstream = errors.New("no healthy upstream")

// ErrRedirect marks a failure while following a registry's redirect to
// another host (502; the node is told only RedirectFailedMessage).
var ErrRedirect = errors.New("following the registry's redirect failed")

// RedirectFailedMessage is all a node is told of a failed redirect:
// which host, address or dial error it was would tell a node what the
// gateway can reach.
const RedirectFailedMessage = "the registry redirected this request to another host, and the gateway could not fetch it from there; the gateway's log has the details"

// UpstreamStatus is the status a request is answered with when no
// upstream answered it with err: 503 when none is healthy
// (ErrNoUpstream), else 502.
func UpstreamStatus(err error) int {
	if errors.Is(err, ErrNoUpstream) {
		return http.StatusServiceUnavailable
	}
	return http.StatusBadGateway
}

// NodeMessage is what a node is told of err, the failure to answer its
// request: err's text, but for a redirect that could not be followed
// (ErrRedirect) only that it could not (the log and the audit record
// have the facts).
func NodeMessage(err error) string {
	if errors.Is(err, ErrRedirect) {
		return RedirectFailedMessage
	}
	return err.Error()
}
