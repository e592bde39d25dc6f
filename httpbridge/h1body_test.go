package httpbridge

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// bodyHandler reads the request body when the path says so, and answers
// with what it read.
func bodyHandler(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/read" {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = w.Write(b)
		return
	}
	_, _ = io.WriteString(w, "unread")
}

// TestH1ExpectContinue: a node that sends Expect: 100-continue gets
// "100 Continue" when the handler first reads the body, then the answer;
// one whose body the handler does not read gets no 100 and a response
// that closes the connection (the body was never sent).
func TestH1ExpectContinue(t *testing.T) {
	s := startH1(t, time.Minute, http.HandlerFunc(bodyHandler))
	c, br := s.dial(t)
	if _, err := io.WriteString(c, "PUT /read HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	cont, err := http.ReadResponse(br, nil)
	if err != nil || cont.StatusCode != http.StatusContinue {
		t.Fatalf("interim %v, %v, want 100 Continue", cont, err)
	}
	if resp, body := roundTrip(t, c, br, "data", "PUT"); resp.StatusCode != 200 || body != "data" || resp.Close {
		t.Fatalf("answer %d %q close=%v, want 200 data on a kept connection", resp.StatusCode, body, resp.Close)
	}
	resp, body := roundTrip(t, c, br, "PUT /skip HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n", "PUT")
	if resp.StatusCode != 200 || body != "unread" || !resp.Close {
		t.Errorf("unread: %d %q close=%v, want 200 unread, Connection: close", resp.StatusCode, body, resp.Close)
	}
	assertClosed(t, br)
}

// TestH1UnreadBodyDiscardedUpToLimit: a body the handler left unread is
// dropped to keep the connection when it is short; a longer one
// (MaxUnreadRequestBody) closes the connection after the answer, and the node
// still reads that answer.
func TestH1UnreadBodyDiscardedUpToLimit(t *testing.T) {
	tests := []struct {
		name  string
		size  int
		close bool
	}{
		{name: "short", size: 10 << 10},
		{name: "just under the limit", size: MaxUnreadRequestBody - 1},
		{name: "at the limit", size: MaxUnreadRequestBody, close: true}, // net/http: as much unread as the limit closes
		{name: "too long", size: 4 * MaxUnreadRequestBody, close: true},
	}
	s := startH1(t, time.Minute, http.HandlerFunc(bodyHandler))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, br := s.dial(t)
			req := "POST /skip HTTP/1.1\r\nHost: a\r\nContent-Length: " + strconv.Itoa(tc.size) + "\r\n\r\n"
			sent := make(chan error, 1)
			go func() { // the node sends its whole request, as many do, before reading
				_, err := io.WriteString(c, req+strings.Repeat("b", tc.size))
				sent <- err
			}()
			resp, body := roundTrip(t, c, br, "", "POST")
			if resp.StatusCode != 200 || body != "unread" || resp.Close != tc.close {
				t.Fatalf("%d %q close=%v, want 200 unread close=%v", resp.StatusCode, body, resp.Close, tc.close)
			}
			if tc.close {
				assertClosed(t, br)
				return
			}
			if err := <-sent; err != nil {
				t.Fatal(err)
			}
			if _, body := roundTrip(t, c, br, getOK, "GET"); body != "unread" {
				t.Errorf("next request on the connection: %q", body)
			}
		})
	}
}
