package upstream

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// registryServer starts an httptest TLS server with cfg that answers
// GET /v2/ through v2 and every other path with 200.
func registryServer(t *testing.T, cfg *tls.Config, v2 http.HandlerFunc) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/v2/", v2)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {})
	srv := httptest.NewUnstartedServer(mux)
	srv.TLS = cfg
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

func answer(status int, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Add(header[i], header[i+1])
		}
		w.WriteHeader(status)
	}
}

// probeCase is a registry server, the probe's configuration and what the
// probe finds.
type probeCase struct {
	name   string
	server *tls.Config
	v2     http.HandlerFunc
	cfg    ProbeConfig
	want   ProbeResult // Addr, Latency, CertNotAfter and Err texts are checked apart
	errs   []string    // substrings of the failed steps' Err, in step order
}

// tokenRealm answers /v2/ with 401 and a token realm.
func tokenRealm() http.HandlerFunc {
	return answer(401, "WWW-Authenticate", `Bearer realm="https://Auth.Example.test:8443/token?a=1,b",service="registry.example.test"`)
}

// probeHTTPCases: an mTLS registry and what its /v2/ answers.
func probeHTTPCases(pki *testPKI) []probeCase {
	mtlsServer := serverConfig(pki.server, pki.ca.pool, 0)
	realm := tokenRealm()
	httpCheck := Check{Kind: CheckHTTP}
	ok := StepResult{OK: true}
	return []probeCase{
		{
			name: "bridge route behind a token realm", server: mtlsServer, v2: realm,
			cfg: ProbeConfig{ClientTLS: pki.clientConfig(&pki.client), Check: httpCheck},
			want: ProbeResult{TCP: ok, TLS: ok, MTLS: ok, HTTP: ok, ClientCertRequested: true, ClientCertRequired: true,
				HTTPStatus: 401, AuthRealm: "https://Auth.Example.test:8443/token?a=1,b", AuthRealmHost: "auth.example.test"},
		},
		{
			name: "redirect to another host", server: mtlsServer,
			v2:  answer(307, "Location", "https://CDN.example.test/v2/"),
			cfg: ProbeConfig{ClientTLS: pki.clientConfig(&pki.client), Check: Check{Kind: CheckHTTP, ExpectStatus: []int{307}}},
			want: ProbeResult{TCP: ok, TLS: ok, MTLS: ok, HTTP: ok, ClientCertRequested: true, ClientCertRequired: true,
				HTTPStatus: 307, RedirectHost: "cdn.example.test"},
		},
		{
			name: "redirect on the same host is not reported", server: mtlsServer,
			v2:  answer(302, "Location", "/v2/elsewhere"),
			cfg: ProbeConfig{ClientTLS: pki.clientConfig(&pki.client), Check: httpCheck},
			want: ProbeResult{TCP: ok, TLS: ok, MTLS: ok, ClientCertRequested: true, ClientCertRequired: true,
				HTTPStatus: 302},
			errs: []string{"status 302, want one of [200 401]"},
		},
		{
			name: "health path other than /v2/", server: mtlsServer, v2: realm,
			cfg: ProbeConfig{ClientTLS: pki.clientConfig(&pki.client), Check: Check{Kind: CheckHTTP, Path: "/healthz", ExpectStatus: []int{200}}},
			want: ProbeResult{TCP: ok, TLS: ok, MTLS: ok, HTTP: ok, ClientCertRequested: true, ClientCertRequired: true,
				HTTPStatus: 200, AuthRealm: "https://Auth.Example.test:8443/token?a=1,b", AuthRealmHost: "auth.example.test"},
		},
	}
}

// probeTLSCases: a client certificate refused, a server certificate not
// trusted, a splice route.
func probeTLSCases(pki *testPKI) []probeCase {
	mtlsServer := serverConfig(pki.server, pki.ca.pool, 0)
	realm := tokenRealm()
	httpCheck := Check{Kind: CheckHTTP}
	ok, skip := StepResult{OK: true}, StepResult{Skipped: true}
	return []probeCase{
		{
			name: "client certificate refused", server: mtlsServer, v2: realm,
			cfg:  ProbeConfig{ClientTLS: pki.clientConfig(&pki.otherClient), Check: httpCheck},
			want: ProbeResult{TCP: ok, TLS: ok, ClientCertRequested: true, ClientCertRequired: true},
			errs: []string{"certificate required", "certificate required"},
		},
		{
			name: "server certificate not trusted", server: serverConfig(pki.otherServer, nil, 0), v2: realm,
			cfg:  ProbeConfig{ClientTLS: pki.clientConfig(&pki.client), Check: Check{Kind: CheckTLS}},
			want: ProbeResult{TCP: ok, HTTP: skip},
			errs: []string{"set upstream_tls.ca", "set upstream_tls.ca", "not http"},
		},
		{
			name: "splice route", server: serverConfig(pki.otherServer, nil, 0), v2: realm,
			cfg:  ProbeConfig{Check: Check{Kind: CheckTLS}},
			want: ProbeResult{TCP: ok, TLS: ok, MTLS: skip, HTTP: skip},
			errs: []string{"splice route", "not http"},
		},
	}
}

func TestProbe(t *testing.T) {
	pki := newPKI(t)
	for _, tt := range append(probeHTTPCases(pki), probeTLSCases(pki)...) {
		t.Run(tt.name, func(t *testing.T) {
			addr := registryServer(t, tt.server, tt.v2)
			tt.cfg.ServerName = testServerName
			got := Probe(context.Background(), addr, tt.cfg)
			checkProbe(t, got, tt.want, tt.errs)
			if got.Addr != addr {
				t.Errorf("Addr = %q, want %q", got.Addr, addr)
			}
			if got.TLS.OK && !got.CertNotAfter.Equal(tt.server.Certificates[0].Leaf.NotAfter) {
				t.Errorf("CertNotAfter = %v, want %v", got.CertNotAfter, tt.server.Certificates[0].Leaf.NotAfter)
			}
			if got.TLS.OK && got.Latency <= 0 {
				t.Errorf("Latency = %v, want > 0", got.Latency)
			}
		})
	}
}

// checkProbe compares got with want, ignoring the fields that vary, and
// checks that each failed or skipped step's Err contains the next of errs.
func checkProbe(t *testing.T, got, want ProbeResult, errs []string) {
	t.Helper()
	var texts []string
	steps := []*StepResult{&got.TCP, &got.TLS, &got.MTLS, &got.HTTP}
	for _, s := range steps {
		if s.Err != "" {
			texts = append(texts, s.Err)
			s.Err = ""
		}
	}
	got.Addr, got.Latency, got.CertNotAfter = "", 0, time.Time{}
	if got != want {
		t.Errorf("Probe() =\n %+v\nwant\n %+v", got, want)
	}
	if len(texts) != len(errs) {
		t.Fatalf("step errors %q, want %d containing %q", texts, len(errs), errs)
	}
	for i := range errs {
		if !strings.Contains(texts[i], errs[i]) {
			t.Errorf("step error %q, want it to contain %q", texts[i], errs[i])
		}
	}
}

func TestProbeClosedPort(t *testing.T) {
	u := startUpstream(t, serverConfig(newPKI(t).server, nil, 0))
	u.stop()
	got := Probe(context.Background(), u.addr, ProbeConfig{Check: Check{Kind: CheckHTTP}, Timeout: 5 * time.Second})
	skip := StepResult{Skipped: true, Err: "no TCP connection"}
	if got.TCP.OK || !strings.Contains(got.TCP.Err, "connection refused") || got.TLS != skip || got.MTLS != skip || got.HTTP != skip {
		t.Fatalf("Probe(closed port) = %+v, want TCP refused and the rest skipped", got)
	}
}
