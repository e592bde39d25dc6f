package admin

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// FuzzReadState: any body yields either a valid state or a 400/413 with a
// message, never a panic.
func FuzzReadState(f *testing.F) {
	for _, seed := range []string{
		`{"state":"ready"}`, `{"state":"drain"}`, `{"state":"maint"}`, "",
		`{"state":"down"}`, `{"state":null}`, `{}`, `[]`, `{"state":"drain"}{}`,
		`{"state":"drain","x":1}`, "\xff\xfe", `{"state":"` + strings.Repeat("a", MaxBodyBytes) + `"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/api/upstreams/r/u", strings.NewReader(string(body)))
		r.Header.Set("Content-Type", "application/json")
		state, code, err := readState(httptest.NewRecorder(), r)
		switch {
		case err == nil && !slices.Contains(validStates, state):
			t.Fatalf("accepted invalid state %q", state)
		case err == nil && len(body) > MaxBodyBytes:
			t.Fatalf("accepted a body of %d bytes", len(body))
		case err != nil && code != http.StatusBadRequest && code != http.StatusRequestEntityTooLarge:
			t.Fatalf("code %d for %v", code, err)
		case err != nil && err.Error() == "":
			t.Fatal("empty error message")
		}
	})
}
