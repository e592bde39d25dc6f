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
}

// fetchToken asks key's realm for a token: GET with service and scope
// (Basic credentials if cred has them), or POST grant_type=refresh_token
// with cred's identity token.
func fetchToken(ctx context.Context, client *http.Client, key tokenKey, cred Credential, now time.Time) (Token, error) {
	req, err := tokenRequest(ctx, key, cred)
	if err != nil {
		return Token{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return Token{}, fmt.Errorf("token request to %s: %w: %w", redactURL(key.realm), ErrTokenService, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return Token{}, &RefusedError{By: "token service " + redactURL(key.realm), Status: resp.StatusCode}
	case resp.StatusCode != http.StatusOK:
		return Token{}, fmt.Errorf("token request to %s: %w: status %d", redactURL(key.realm), ErrTokenService, resp.StatusCode)
	}
	return readToken(resp.Body, key, now)
}

// tokenRequest builds the request for key's token.
func tokenRequest(ctx context.Context, key tokenKey, cred Credential) (*http.Request, error) {
	u, err := url.Parse(key.realm)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("token realm %q: %w: want an https URL", redactURL(key.realm), ErrTokenService)
	}
	form := url.Values{}
	if key.service != "" {
		form.Set("service", key.service)
	}
	if key.scope != "" {
		form.Set("scope", key.scope)
	}
	if !cred.IdentityToken.Empty() {
		form.Set("grant_type", "refresh_token")
		form.Set("refresh_token", cred.IdentityToken.Reveal())
		form.Set("client_id", clientID)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(form.Encode()))
		if err != nil {
			return nil, fmt.Errorf("token request: %w", err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return req, nil
	}
	q := u.Query()
	for k, v := range form {
		q[k] = v
	}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("token request: %w", err)
	}
	if cred.basic() {
		req.SetBasicAuth(cred.Username, cred.Password.Reveal())
	}
	return req, nil
}

// readToken decodes a token service's answer.
func readToken(body io.Reader, key tokenKey, now time.Time) (Token, error) {
	b, err := io.ReadAll(io.LimitReader(body, MaxTokenResponse+1))
	if err != nil {
		return Token{}, fmt.Errorf("token response from %s: %w: %w", redactURL(key.realm), ErrTokenService, err)
	}
	if len(b) > MaxTokenResponse {
		return Token{}, fmt.Errorf("token response from %s: %w: larger than %d bytes", redactURL(key.realm), ErrTokenService, MaxTokenResponse)
	}
	var r tokenReply
	if err := json.Unmarshal(b, &r); err != nil {
		return Token{}, fmt.Errorf("token response from %s: %w: not JSON", redactURL(key.realm), ErrTokenService)
	}
	v := r.Token
	if v == "" {
		v = r.AccessToken
	}
	if v == "" {
		return Token{}, fmt.Errorf("token response from %s: %w: no token or access_token", redactURL(key.realm), ErrTokenService)
	}
	life := lifetime(r.ExpiresIn)
	return Token{Value: NewSecret(v), Expires: now.Add(life), Renew: now.Add(life - renewMargin(life))}, nil
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
