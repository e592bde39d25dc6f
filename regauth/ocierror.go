package regauth

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// RefusedMessage is the OCI error message a node gets when the registry
// refused the gateway's credentials.
const RefusedMessage = "the gateway's credentials were refused by the registry"

// codeUnauthorized is the OCI distribution error code of a 401.
const codeUnauthorized = "UNAUTHORIZED"

// RefusedBody is the OCI error body of WriteRefused: {"errors":[{"code":
// "UNAUTHORIZED","message":RefusedMessage}]} and a newline.
func RefusedBody() []byte {
	type ociError struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	b, _ := json.Marshal(struct {
		Errors []ociError `json:"errors"`
	}{Errors: []ociError{{Code: codeUnauthorized, Message: RefusedMessage}}})
	return append(b, '\n')
}

// WriteRefused answers a node 401 with RefusedBody. It sets no
// WWW-Authenticate: the node has nothing to answer with, and the gateway's
// realm is none of its business.
func WriteRefused(w http.ResponseWriter) {
	body := RefusedBody()
	h := w.Header()
	h.Del("WWW-Authenticate")
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = w.Write(body)
}
