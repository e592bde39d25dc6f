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
	// CodeUnauthorized: the registry refused the gateway's own
	// credentials (routes[].http.auth).
	CodeUnauthorized = "UNAUTHORIZED"
)

// Codes lists the codes above.
var Codes = []string{CodeDenied, CodeUnavailable, CodeUnsupported, CodeUnauthorized}

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

// ErrCredentialsRefused marks the registry refusing the gateway's own
// credentials (routes[].http.auth: its token service answered 401 or
// 403, or the registry still answered 401 to a fresh token): 401
// UNAUTHORIZED, CredentialsRefusedMessage.
var ErrCredentialsRefused = errors.New("the registry refused the gateway's credentials")

// CredentialsRefusedMessage is what a node is told when the registry
// refused the gateway's credentials.
const CredentialsRefusedMessage = "the gateway's credentials were refused by the registry"

// ErrTokenService marks a token the gateway could not get from the
// registry's token service for another reason than a refusal (502; the
// node is told only TokenFailedMessage).
var ErrTokenService = errors.New("token service failed")

// TokenFailedMessage is all a node is told of a failed token request:
// the token service's address and answer are the gateway's business.
const TokenFailedMessage = "the gateway could not get a token from the registry's token service; the gateway's log has the details"

// UpstreamStatus is the status a request is answered with when no
// upstream answered it with err: 503 when none is healthy
// (ErrNoUpstream), 401 when the registry refused the gateway's
// credentials (ErrCredentialsRefused), else 502.
func UpstreamStatus(err error) int {
	switch {
	case errors.Is(err, ErrNoUpstream):
		return http.StatusServiceUnavailable
	case errors.Is(err, ErrCredentialsRefused):
		return http.StatusUnauthorized
	}
	return http.StatusBadGateway
}

// UpstreamCode is the OCI error code of UpstreamStatus(err):
// UNAUTHORIZED for ErrCredentialsRefused, else UNAVAILABLE.
func UpstreamCode(err error) string {
	if errors.Is(err, ErrCredentialsRefused) {
		return CodeUnauthorized
	}
	return CodeUnavailable
}

// NodeMessage is what a node is told of err, the failure to answer its
// request: err's text, but for a redirect that could not be followed
// (ErrRedirect), a refusal of the gateway's credentials
// (ErrCredentialsRefused) and a failed token request (ErrTokenService)
// only that (the log and the audit record have the facts).
func NodeMessage(err error) string {
	switch {
	case errors.Is(err, ErrRedirect):
		return RedirectFailedMessage
	case errors.Is(err, ErrCredentialsRefused):
		return CredentialsRefusedMessage
	case errors.Is(err, ErrTokenService):
		return TokenFailedMessage
	}
	return err.Error()
}

// WriteUpstreamError answers w for err, the failure to get an answer
// from the registry: UpstreamStatus, UpstreamCode and NodeMessage of
// err. It sets no WWW-Authenticate: a node has nothing to answer a
// refusal of the gateway's credentials with.
func WriteUpstreamError(w http.ResponseWriter, err error) {
	w.Header().Del("WWW-Authenticate")
	WriteError(w, UpstreamStatus(err), UpstreamCode(err), NodeMessage(err))
}
