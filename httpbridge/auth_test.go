package httpbridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/snigate/snigate/oci"
)

// authProbe is an AuthFunc that records what reaches it and answers
// with err when set, else sends the request on.
type authProbe struct {
	sawAuth atomic.Value // string: the last request's Authorization
	tokens  atomic.Bool  // it was given a token transport
	err     error
}

func (a *authProbe) wrap(upstream, tokens http.RoundTripper) http.RoundTripper {
	a.tokens.Store(tokens != nil)
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		a.sawAuth.Store(r.Header.Get("Authorization"))
		if a.err != nil {
			return nil, a.err
		}
		return upstream.RoundTrip(r)
	})
}

// refusedForTest is what a regauth.RefusedError is to the chain.
type refusedForTest struct{}

func (refusedForTest) Error() string {
	return "the registry refused the gateway's credentials: token service https://auth.internal/token answered 401"
}
func (refusedForTest) Is(target error) bool { return target == oci.ErrCredentialsRefused }

// TestAuthFuncDropsTheNodesAuthorization: on a route with AuthFunc the
// node's Authorization is gone before the upstream leg (and never reaches
// the registry), the token transport is given, and the audit record says
// "auth":"gateway"; on a route without, a node's Authorization passes and
// is audited as "node", none as "".
func TestAuthFuncDropsTheNodesAuthorization(t *testing.T) {
	nodeAuth := http.Header{"Authorization": {"Bearer node-token"}}
	for _, tc := range []struct {
		name     string
		auth     bool
		header   http.Header
		wantAuth string // what the registry saw
		audit    string
	}{
		{name: "auth route", auth: true, header: nodeAuth, wantAuth: "", audit: AuthGateway},
		{name: "node's own", auth: false, header: nodeAuth, wantAuth: "Bearer node-token", audit: AuthNode},
		{name: "none", auth: false, audit: AuthNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestPKI(t)
			up, seen := echoUpstream(t, p)
			probe := &authProbe{}
			cfg := Config{}
			if tc.auth {
				cfg.AuthFunc = probe.wrap
			}
			w := newWorld(t, p, worldOpts{addrs: []string{up.addr}, cfg: cfg})
			if resp, body := do(t, w.node(t, "h2"), "GET", "/v2/team/app/manifests/v1", tc.header); resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d %s", resp.StatusCode, body)
			}
			if got := seen.all()[0].Header.Get("Authorization"); got != tc.wantAuth {
				t.Errorf("the registry saw Authorization %q, want %q", got, tc.wantAuth)
			}
			if tc.auth && (probe.sawAuth.Load() != "" || !probe.tokens.Load()) {
				t.Errorf("AuthFunc's transport saw Authorization %q (want none), token transport given: %v", probe.sawAuth.Load(), probe.tokens.Load())
			}
			if rec := w.audit.wait(t, 1)[0]; rec.Auth != tc.audit {
				t.Errorf("audit auth %q, want %q", rec.Auth, tc.audit)
			}
		})
	}
}

// TestAuthFuncErrorsAnswerTheNode: the gateway's credentials refused is
// 401 UNAUTHORIZED with the refusal's message and no WWW-Authenticate; a
// token that could not be had is 502 with a message that names neither
// the token service nor its answer.
func TestAuthFuncErrorsAnswerTheNode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		status int
		code   string
		msg    string
	}{
		{name: "refused", err: fmt.Errorf("upstream leg: %w", refusedForTest{}), status: http.StatusUnauthorized,
			code: oci.CodeUnauthorized, msg: oci.CredentialsRefusedMessage},
		{name: "token service", err: fmt.Errorf("token request to https://auth.internal/token: %w: status 500", oci.ErrTokenService),
			status: http.StatusBadGateway, code: oci.CodeUnavailable, msg: oci.TokenFailedMessage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestPKI(t)
			up, _ := echoUpstream(t, p)
			probe := &authProbe{err: tc.err}
			w := newWorld(t, p, worldOpts{addrs: []string{up.addr}, cfg: Config{AuthFunc: probe.wrap}})
			resp, body := do(t, w.node(t, "http/1.1"), "GET", "/v2/team/app/manifests/v1", nil)
			var eb oci.ErrorBody
			if err := json.Unmarshal([]byte(body), &eb); err != nil || resp.StatusCode != tc.status || len(eb.Errors) != 1 ||
				eb.Errors[0].Code != tc.code || eb.Errors[0].Message != tc.msg {
				t.Fatalf("%d %s, want %d %s %q", resp.StatusCode, body, tc.status, tc.code, tc.msg)
			}
			if resp.Header.Get("WWW-Authenticate") != "" || strings.Contains(body, "auth.internal") {
				t.Errorf("the node was told of the gateway's token service: %v %s", resp.Header, body)
			}
			if rec := w.audit.wait(t, 1)[0]; !errors.Is(tc.err, oci.ErrCredentialsRefused) && !strings.Contains(rec.Error, "auth.internal") {
				t.Errorf("audit error %q, want the facts", rec.Error)
			}
		})
	}
}
