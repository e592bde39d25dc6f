package httpbridge

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// OCI distribution error codes the gateway answers with itself.
const (
	codeDenied      = "DENIED"      // refused by the route's policy
	codeUnavailable = "UNAVAILABLE" // no upstream could answer
	codeUnsupported = "UNSUPPORTED" // a request the gateway cannot forward (a malformed body)
)

// ociErrors is the distribution specification's error body.
type ociErrors struct {
	Errors []ociError `json:"errors"`
}

type ociError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// writeOCIError answers with status and an OCI error body carrying code
// and msg.
func writeOCIError(w http.ResponseWriter, status int, code, msg string) {
	body, _ := json.Marshal(ociErrors{Errors: []ociError{{Code: code, Message: msg}}})
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
