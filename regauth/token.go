package regauth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/snigate/snigate/oci"
)

// Token service limits and defaults.
const (
	// DefaultTokenLifetime is a token's lifetime when the service gives no
	// expires_in (the distribution token specification's default).
	DefaultTokenLifetime = 60 * time.Second
	// MaxTokenLifetime caps what expires_in may claim: a token is asked for
	// again at least this often.
	MaxTokenLifetime = 24 * time.Hour
	// DefaultFetchTimeout bounds one token request, redirects included.
	DefaultFetchTimeout = 15 * time.Second
	// MaxTokenResponse bounds a token service's answer.
	MaxTokenResponse = 64 << 10
	// maxTokenRedirects bounds the redirects a token request follows.
	maxTokenRedirects = 5
	// clientID names the gateway in OAuth2 token requests.
	clientID = "snigate"
)

// ErrTokenService is returned (wrapped) when a token could not be had for
// a reason other than refused credentials: the service is unreachable,
// answers 5xx, or answers something that is not a token.
var ErrTokenService = oci.ErrTokenService

// Token is a bearer token from a registry's token service.
type Token struct {
	Value Secret
	// Expires is when the token stops being valid, counted from when it
	// was asked for (not from issued_at: the gateway's and the service's
	// clocks need not agree).
	Expires time.Time
	// Renew is when the gateway asks for the next one, before Expires.
	Renew time.Time
}

// tokenKey is what a token is cached by.
type tokenKey struct {
	realm, service, scope string
}

// tokenReply is a token service's JSON answer (distribution token
// specification, and OAuth2's access_token for the refresh_token grant).
type tokenReply struct {
	Token       string `json:"token"`
	AccessToken string `json:"access_token"`
	ExpiresIn   int64  `json:"expires_in"`
	IssuedAt    string `json:"issued_at"`
	// RefreshToken is an OAuth2 refresh token (the answer to a password
	// grant with access_type=offline, or a rotated one): the next token is
	// asked with it instead of the password.
	RefreshToken string `json:"refresh_token"`
}

// realmURL parses key's realm, which must be an https URL: the
// credentials sent to it would otherwise go in the clear.
func realmURL(key tokenKey) (*url.URL, error) {
	u, err := url.Parse(key.realm)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("token realm %q: %w: want an https URL", redactURL(key.realm), ErrTokenService)
	}
	return u, nil
}

// getRequest is the token specification's GET realm?service=&scope=,
// with Basic user:secret when secret is not empty.
func getRequest(ctx context.Context, key tokenKey, user string, secret Secret) (*http.Request, error) {
	u, err := realmURL(key)
	if err != nil {
		return nil, err
	}
	q := u.Query()
	if key.service != "" {
		q.Set("service", key.service)
	}
	if key.scope != "" {
		q.Set("scope", key.scope)
	}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("token request: %w", err)
	}
	if !secret.Empty() {
		req.SetBasicAuth(user, secret.Reveal())
	}
	return req, nil
}

// postRequest is the OAuth2 token request (distribution's "OAuth2 token
// specification"): POST realm with form, service, scope and client_id.
func postRequest(ctx context.Context, key tokenKey, form url.Values) (*http.Request, error) {
	u, err := realmURL(key)
	if err != nil {
		return nil, err
	}
	if key.service != "" {
		form.Set("service", key.service)
	}
	if key.scope != "" {
		form.Set("scope", key.scope)
	}
	form.Set("client_id", clientID)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("token request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req, nil
}

// readToken decodes a token service's answer: the token and the refresh
// token the answer holds (empty when none).
func readToken(body io.Reader, key tokenKey, now time.Time) (Token, Secret, error) {
	b, err := io.ReadAll(io.LimitReader(body, MaxTokenResponse+1))
	if err != nil {
		return Token{}, Secret{}, fmt.Errorf("token response from %s: %w: %w", redactURL(key.realm), ErrTokenService, err)
	}
	if len(b) > MaxTokenResponse {
		return Token{}, Secret{}, fmt.Errorf("token response from %s: %w: larger than %d bytes", redactURL(key.realm), ErrTokenService, MaxTokenResponse)
	}
	var r tokenReply
	if err := json.Unmarshal(b, &r); err != nil {
		return Token{}, Secret{}, fmt.Errorf("token response from %s: %w: not JSON", redactURL(key.realm), ErrTokenService)
	}
	v := r.Token
	if v == "" {
		v = r.AccessToken
	}
	if v == "" {
		return Token{}, Secret{}, fmt.Errorf("token response from %s: %w: no token or access_token", redactURL(key.realm), ErrTokenService)
	}
	life := lifetime(r.ExpiresIn)
	return Token{Value: NewSecret(v), Expires: now.Add(life), Renew: now.Add(life - renewMargin(life))}, NewSecret(r.RefreshToken), nil
}

// lifetime turns expires_in into a duration: DefaultTokenLifetime when
// absent or not positive, at most MaxTokenLifetime.
func lifetime(expiresIn int64) time.Duration {
	if expiresIn <= 0 {
		return DefaultTokenLifetime
	}
	if expiresIn >= int64(MaxTokenLifetime/time.Second) {
		return MaxTokenLifetime
	}
	return time.Duration(expiresIn) * time.Second
}

// renewMargin is how long before expiry a token is renewed: a tenth of
// its lifetime, and at least 30 s (at most half the lifetime), so that a
// request sent just before renewal still arrives with a valid token.
func renewMargin(life time.Duration) time.Duration {
	return max(life/10, min(30*time.Second, life/2))
}

// checkTokenRedirect is the token client's redirect policy: a few, https
// only. net/http drops the Authorization header on a redirect to another
// host.
func checkTokenRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxTokenRedirects {
		return fmt.Errorf("token request: stopped after %d redirects", maxTokenRedirects)
	}
	if req.URL.Scheme != "https" {
		return fmt.Errorf("token request: refusing a redirect to %s", req.URL.Scheme)
	}
	return nil
}

// redactURL drops a realm's user info and query (a realm may carry
// either) for errors and logs.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}
