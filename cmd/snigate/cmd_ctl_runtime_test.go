package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fakeAdmin answers the runtime API as a gateway whose configuration file
// is broken.
func fakeAdmin(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	answer := func(code int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			w.Write([]byte(body))
		}
	}
	mux.Handle("POST /api/reload", answer(422, `{"result":"failure","reason":"admin API","at":"2027-01-01T00:00:00Z",
		"errors":["snigate.yaml:3: listen.tsl: unknown key","snigate.yaml:7: routes[0].mode: want bridge or splice"]}`))
	mux.Handle("GET /api/routes", answer(200, `[{"route":"registry","names":["registry.example.com"],"mode":"splice","balance":"roundrobin","upstreams":["10.1.0.10:443"]}]`))
	mux.Handle("GET /api/cache", answer(200, `[{"route":"registry","dir":"/var/cache/snigate/registry","max_size":1073741824,"bytes":2048,"entries":2,"hits":3,"misses":1,"hit_ratio":0.75}]`))
	mux.Handle("POST /api/cache/purge", answer(200, `[{"route":"registry","dir":"/var/cache/snigate/registry","max_size":1073741824,"bytes":0,"entries":0}]`))
	mux.Handle("POST /api/ready", answer(200, `{"ready":false,"switch":"off","reason":"switched off"}`))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestCtlRuntimeVerbs(t *testing.T) {
	addr := fakeAdmin(t)
	tests := []struct {
		name       string
		args       []string
		want       int
		wantOut    []string
		wantStderr []string
	}{
		{name: "reload rejected prints check's errors and exits 2", args: []string{"ctl", "--admin", addr, "reload"}, want: 2,
			wantStderr: []string{"invalid configuration (2 errors):\nsnigate.yaml:3: listen.tsl: unknown key\nsnigate.yaml:7: routes[0].mode"}},
		{name: "reload -o json prints the answer", args: []string{"ctl", "--admin", addr, "-o", "json", "reload"}, want: 2,
			wantOut: []string{`"result": "failure"`}},
		{name: "routes table", args: []string{"ctl", "--admin", addr, "routes"}, want: 0,
			wantOut: []string{"ROUTE", "registry  splice"}},
		{name: "routes json", args: []string{"ctl", "--admin", addr, "-o", "json", "routes"}, want: 0,
			wantOut: []string{`"upstreams": [`}},
		{name: "cache table", args: []string{"ctl", "--admin", addr, "cache"}, want: 0,
			wantOut: []string{"registry", "/var/cache/snigate/registry"}},
		{name: "cache json", args: []string{"ctl", "--admin", addr, "cache", "-o", "json"}, want: 0,
			wantOut: []string{`"hit_ratio": 0.75`}},
		{name: "cache purge", args: []string{"ctl", "--admin", addr, "cache", "purge", "sha256:" + strings.Repeat("a", 64)}, want: 0,
			wantOut: []string{"registry"}},
		{name: "cache purge takes one digest", args: []string{"ctl", "--admin", addr, "cache", "purge", "a", "b"}, want: 2,
			wantStderr: []string{"accepts at most 1 arg"}},
		{name: "ready off", args: []string{"ctl", "--admin", addr, "ready", "off"}, want: 0,
			wantOut: []string{"switch: off", "readyz: not ready: switched off"}},
		{name: "ready with a bad word", args: []string{"ctl", "--admin", addr, "ready", "maybe"}, want: 2,
			wantStderr: []string{`want "on" or "off"`}},
		{name: "bad output format", args: []string{"ctl", "-o", "yaml", "routes"}, want: 2,
			wantStderr: []string{"want table or json"}},
		{name: "unknown verb lists the verbs", args: []string{"ctl", "frobnicate"}, want: 2,
			wantStderr: []string{`want one of "answers", "cache", "config", "ready", "reload", "routes", "set", "upstreams"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := run(tt.args, &stdout, &stderr); got != tt.want {
				t.Errorf("exit status %d, want %d\nstdout: %s\nstderr: %s", got, tt.want, &stdout, &stderr)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, &stdout)
				}
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, &stderr)
				}
			}
		})
	}
}

func TestCtlJSONIsValid(t *testing.T) {
	addr := fakeAdmin(t)
	var stdout, stderr bytes.Buffer
	if got := run([]string{"ctl", "--admin", addr, "-o", "json", "routes"}, &stdout, &stderr); got != 0 {
		t.Fatalf("exit %d: %s", got, &stderr)
	}
	var v []map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &v); err != nil || len(v) != 1 {
		t.Fatalf("-o json output is not the routes array: %v\n%s", err, &stdout)
	}
}
