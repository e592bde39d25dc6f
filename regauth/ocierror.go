package regauth

import (
	"net/http"

	"github.com/snigate/snigate/oci"
)

// RefusedMessage is the OCI error message a node gets when the registry
// refused the gateway's credentials (oci.CredentialsRefusedMessage).
const RefusedMessage = oci.CredentialsRefusedMessage

// RefusedBody is the OCI error body of WriteRefused: {"errors":[{"code":
// "UNAUTHORIZED","message":RefusedMessage}]} and a newline.
func RefusedBody() []byte {
	rec := &bodyRecorder{h: http.Header{}}
	WriteRefused(rec)
	return rec.body
}

// WriteRefused answers a node 401 with RefusedBody, oci's writer for a
// *RefusedError. It sets no WWW-Authenticate: the node has nothing to
// answer with, and the gateway's realm is none of its business.
func WriteRefused(w http.ResponseWriter) {
	oci.WriteUpstreamError(w, &RefusedError{})
}

// bodyRecorder keeps what WriteRefused writes.
type bodyRecorder struct {
	h    http.Header
	body []byte
}

func (b *bodyRecorder) Header() http.Header { return b.h }
func (b *bodyRecorder) WriteHeader(int)     {}
func (b *bodyRecorder) Write(p []byte) (int, error) {
	b.body = append(b.body, p...)
	return len(p), nil
}
