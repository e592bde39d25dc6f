package httpbridge

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
)

// readFromWriter is an HTTP/1.1 ResponseWriter with a ReadFrom that
// copies src and then fails as told (the node gone).
type readFromWriter struct {
	*httptest.ResponseRecorder
	fail error
}

func (w readFromWriter) ReadFrom(src io.Reader) (int64, error) {
	n, err := io.Copy(w.ResponseRecorder, src)
	if err == nil {
		err = w.fail
	}
	return n, err
}

// TestRecorderReadFromTellsNodeFromUpstream: a copy through the
// recorder's ReadFrom counts the bytes; a failed write is the node's
// error (recorded, as Write records it), a failed read is the
// upstream's (returned, not recorded as the node gone).
func TestRecorderReadFromTellsNodeFromUpstream(t *testing.T) {
	nodeGone := errors.New("node gone")
	tests := []struct {
		name     string
		src      io.Reader
		fail     error
		wantErr  error
		recorded error
	}{
		{name: "copied", src: strings.NewReader("hello")},
		{name: "node gone", src: strings.NewReader("hello"), fail: nodeGone, wantErr: nodeGone, recorded: nodeGone},
		{name: "upstream fails", src: io.MultiReader(strings.NewReader("hello"), iotest.ErrReader(errUpstreamBroke)), wantErr: errUpstreamBroke},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(readFromWriter{ResponseRecorder: httptest.NewRecorder(), fail: tc.fail}, 1)
			n, err := rec.ReadFrom(tc.src)
			if n != 5 || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Errorf("ReadFrom = %d, %v; want 5, %v", n, err, tc.wantErr)
			}
			if rec.bytes != 5 || rec.status != http.StatusOK || !errors.Is(rec.err, tc.recorded) || (tc.recorded == nil && rec.err != nil) {
				t.Errorf("recorded %d bytes, status %d, error %v; want 5, 200, %v", rec.bytes, rec.status, rec.err, tc.recorded)
			}
		})
	}
}
