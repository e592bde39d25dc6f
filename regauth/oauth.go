package regauth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// MaxGrantRealms bounds the realms a tokenClient remembers something of
// (a refresh token, a service that takes no POST): a registry naming
// more realms than that costs a request more for the others, not memory.
const MaxGrantRealms = 64

// tokenClient asks token services for tokens as docker's and containerd's
// clients do. Anonymously: GET realm?service=&scope=. With credentials:
// the OAuth2 POST (grant_type=password with access_type=offline, or
// grant_type=refresh_token with an identity token), and a refresh_token
// in the answer is kept and used for the next token instead of the
// password, as long as the source's credentials are the ones it was had
// with. A service that answers the POST with 404 or 405 is asked with GET
// and Basic credentials, then and from then on; one that answers a
// password grant with 400 or 401 is asked with GET too, and from then on
// only when that worked (a wrong password fails both).
type tokenClient struct {
	http *http.Client

	mu      sync.Mutex
	getOnly map[string]bool          // realms whose service takes no POST
	refresh map[grantKey]keptRefresh // refresh tokens the services handed out
}

// grantKey is what a refresh token is kept by: the service it came from.
type grantKey struct{ realm, service string }

// keptRefresh is a refresh token a service handed out and the
// fingerprint of the credentials it was had with.
type keptRefresh struct {
	token Secret
	cred  [sha256.Size]byte
}

func newTokenClient(client *http.Client) *tokenClient {
	return &tokenClient{http: client, getOnly: map[string]bool{}, refresh: map[grantKey]keptRefresh{}}
}

// fetch asks key's realm for a token with cred.
func (c *tokenClient) fetch(ctx context.Context, key tokenKey, cred Credential, now time.Time) (Token, error) {
	if cred.Anonymous() || c.takesNoPOST(key.realm) {
		return c.get(ctx, key, cred, now)
	}
	fp := fingerprint(cred)
	if rt, ok := c.kept(key, fp); ok {
		tok, status, err := c.post(ctx, key, refreshForm(rt), fp, now)
		if err == nil || !clientFault(status) {
			return tok, err
		}
		c.forget(key, rt) // expired or revoked: the configured credentials once more
	}
	tok, status, err := c.post(ctx, key, grantForm(cred), fp, now)
	switch {
	case status == http.StatusNotFound || status == http.StatusMethodNotAllowed:
		c.markGetOnly(key.realm) // no OAuth2 here
		return c.get(ctx, key, cred, now)
	case (status == http.StatusBadRequest || status == http.StatusUnauthorized) && cred.IdentityToken.Empty():
		// Wrong credentials, or a service that refuses the password grant
		// but takes GET with Basic (containerd names JFrog Artifactory
		// and ACR): GET tells, and is remembered only when it worked.
		tok, err := c.get(ctx, key, cred, now)
		if err == nil {
			c.markGetOnly(key.realm)
		}
		return tok, err
	}
	return tok, err
}

// get asks with GET, with Basic credentials when cred has any: the
// password, or an identity token as the password (containerd's fallback).
func (c *tokenClient) get(ctx context.Context, key tokenKey, cred Credential, now time.Time) (Token, error) {
	secret := cred.Password
	if !cred.IdentityToken.Empty() {
		secret = cred.IdentityToken
	}
	req, err := getRequest(ctx, key, cred.Username, secret)
	if err != nil {
		return Token{}, err
	}
	tok, _, _, err := c.exchange(req, key, now)
	return tok, err
}

// post sends the OAuth2 form and keeps the refresh token of the answer.
// status is the service's answer (0 when there was none).
func (c *tokenClient) post(ctx context.Context, key tokenKey, form url.Values, fp [sha256.Size]byte, now time.Time) (Token, int, error) {
	req, err := postRequest(ctx, key, form)
	if err != nil {
		return Token{}, 0, err
	}
	tok, refresh, status, err := c.exchange(req, key, now)
	if err == nil && !refresh.Empty() {
		c.keep(key, refresh, fp)
	}
	return tok, status, err
}

// exchange sends a token request and reads the answer.
func (c *tokenClient) exchange(req *http.Request, key tokenKey, now time.Time) (Token, Secret, int, error) {
	resp, err := c.http.Do(req)
	if err != nil {
		return Token{}, Secret{}, 0, fmt.Errorf("token request to %s: %w: %w", redactURL(key.realm), ErrTokenService, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.CopyN(io.Discard, resp.Body, maxDiscard)
		return Token{}, Secret{}, resp.StatusCode, statusError(key, resp.StatusCode)
	}
	tok, refresh, err := readToken(resp.Body, key, now)
	return tok, refresh, resp.StatusCode, err
}

// statusError is the error of a token service's answer other than 200:
// 401 and 403 refuse the gateway's credentials.
func statusError(key tokenKey, status int) error {
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		return &RefusedError{By: "token service " + redactURL(key.realm), Status: status}
	}
	return fmt.Errorf("token request to %s: %w: status %d", redactURL(key.realm), ErrTokenService, status)
}

// clientFault reports whether a token service's status blames the
// request (a refresh token expired, revoked, or not understood), not the
// service.
func clientFault(status int) bool { return status >= 400 && status < 500 }

// grantForm is the OAuth2 grant of the configured credentials.
func grantForm(cred Credential) url.Values {
	if !cred.IdentityToken.Empty() {
		return refreshForm(cred.IdentityToken)
	}
	return url.Values{"grant_type": {"password"}, "username": {cred.Username},
		"password": {cred.Password.Reveal()}, "access_type": {"offline"}}
}

// refreshForm is the OAuth2 refresh_token grant of rt.
func refreshForm(rt Secret) url.Values {
	return url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt.Reveal()}}
}

func (c *tokenClient) takesNoPOST(realm string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.getOnly[realm]
}

func (c *tokenClient) markGetOnly(realm string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.getOnly) < MaxGrantRealms {
		c.getOnly[realm] = true
	}
}

// kept is the refresh token kept for key's service, if it was had with
// the credentials of fingerprint fp (a rotated password drops it).
func (c *tokenClient) kept(key tokenKey, fp [sha256.Size]byte) (Secret, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.refresh[grantKey{key.realm, key.service}]
	if !ok || k.cred != fp {
		return Secret{}, false
	}
	return k.token, true
}

func (c *tokenClient) keep(key tokenKey, rt Secret, fp [sha256.Size]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gk := grantKey{key.realm, key.service}
	if _, ok := c.refresh[gk]; ok || len(c.refresh) < MaxGrantRealms {
		c.refresh[gk] = keptRefresh{token: rt, cred: fp}
	}
}

// forget drops key's kept refresh token if it is still rt.
func (c *tokenClient) forget(key tokenKey, rt Secret) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gk := grantKey{key.realm, key.service}
	if c.refresh[gk].token == rt {
		delete(c.refresh, gk)
	}
}
