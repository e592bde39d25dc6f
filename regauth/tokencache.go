package regauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// DefaultErrorTTL is how long a failed token request (refused or not) is
// remembered for its key: requests in that window get the same error
// without asking the service again. A change of the credentials (a
// rotated password file) ends the window at once.
const DefaultErrorTTL = 5 * time.Second

// Results of a token lookup, the result label of
// snigate_http_auth_tokens_total.
const (
	ResultFetched = "fetched" // asked the token service and got a token
	ResultCached  = "cached"  // served a cached token, or one another request was fetching
	ResultRefused = "refused" // the registry refused the gateway's credentials
	ResultError   = "error"   // no token for another reason (service down, bad answer)
)

// tokenCache holds tokens per realm, service and scope, shared by every
// request: one fetch per key at a time (single-flight), renewal before
// expiry, failures remembered for errorTTL.
type tokenCache struct {
	client       *tokenClient
	src          Source
	errorTTL     time.Duration
	fetchTimeout time.Duration

	group   singleflight.Group
	mu      sync.Mutex
	entries map[tokenKey]*cacheEntry
}

// cacheEntry is a key's last token and last failure.
type cacheEntry struct {
	tok      Token
	err      error
	errUntil time.Time
	errCred  [sha256.Size]byte // the credentials the failure was had with
}

func newTokenCache(client *http.Client, src Source, errorTTL, fetchTimeout time.Duration) *tokenCache {
	return &tokenCache{client: newTokenClient(client), src: src, errorTTL: errorTTL, fetchTimeout: fetchTimeout, entries: map[tokenKey]*cacheEntry{}}
}

// get returns a token for key and the lookup's result (ResultFetched,
// ResultCached, ResultRefused or ResultError).
func (c *tokenCache) get(ctx context.Context, key tokenKey) (Token, string, error) {
	now := time.Now()
	e := c.entry(key)
	if !e.tok.Value.Empty() && now.Before(e.tok.Renew) {
		return e.tok, ResultCached, nil
	}
	if e.err != nil && now.Before(e.errUntil) {
		cred, err := c.src.Credential(ctx)
		if err != nil {
			return Token{}, ResultError, fmt.Errorf("credentials: %w", err)
		}
		if fingerprint(cred) == e.errCred {
			return Token{}, resultOf(e.err), e.err
		}
	}
	return c.fetch(ctx, key, e.tok)
}

// fetch asks for key's token once for all concurrent callers. The fetch
// runs under its own timeout, not the first caller's context, so one
// node leaving does not fail the others; each caller waits only as long
// as its own context allows.
func (c *tokenCache) fetch(ctx context.Context, key tokenKey, old Token) (Token, string, error) {
	ran := false
	ch := c.group.DoChan(key.realm+"\x00"+key.service+"\x00"+key.scope, func() (any, error) {
		ran = true
		return c.fetchOnce(context.WithoutCancel(ctx), key)
	})
	select {
	case <-ctx.Done():
		return Token{}, ResultError, fmt.Errorf("wait for a token: %w", ctx.Err())
	case r := <-ch:
		if r.Err != nil {
			if errors.Is(r.Err, ErrTokenService) && time.Now().Before(old.Expires) {
				return old, ResultCached, nil // still valid: renew later
			}
			return Token{}, resultOf(r.Err), r.Err
		}
		if ran {
			return r.Val.(Token), ResultFetched, nil
		}
		return r.Val.(Token), ResultCached, nil
	}
}

// fetchOnce asks the token service and records the outcome.
func (c *tokenCache) fetchOnce(ctx context.Context, key tokenKey) (Token, error) {
	ctx, cancel := context.WithTimeout(ctx, c.fetchTimeout)
	defer cancel()
	cred, err := c.src.Credential(ctx)
	if err != nil {
		return Token{}, fmt.Errorf("credentials: %w", err)
	}
	tok, err := c.client.fetch(ctx, key, cred, time.Now())
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweepLocked(time.Now())
	e := c.entries[key]
	if e == nil {
		e = &cacheEntry{}
		c.entries[key] = e
	}
	if err != nil {
		e.err, e.errUntil, e.errCred = err, time.Now().Add(c.errorTTL), fingerprint(cred)
		return Token{}, err
	}
	e.tok, e.err = tok, nil
	return tok, nil
}

// entry returns a copy of key's entry (zero when none).
func (c *tokenCache) entry(key tokenKey) cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[key]; e != nil {
		return *e
	}
	return cacheEntry{}
}

// invalidate forgets key's token if it is still tok: the registry
// refused it before its time.
func (c *tokenCache) invalidate(key tokenKey, tok Token) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[key]; e != nil && e.tok.Value == tok.Value {
		e.tok = Token{}
	}
}

// sweepLocked drops entries whose token expired and whose failure is
// over, so the cache holds only the scopes in use. c.mu is held.
func (c *tokenCache) sweepLocked(now time.Time) {
	for k, e := range c.entries {
		if !now.Before(e.tok.Expires) && !now.Before(e.errUntil) {
			delete(c.entries, k)
		}
	}
}

// resultOf is the metric result of a lookup's error.
func resultOf(err error) string {
	var re *RefusedError
	if errors.As(err, &re) {
		return ResultRefused
	}
	return ResultError
}

// fingerprint identifies credentials without holding them.
func fingerprint(c Credential) [sha256.Size]byte {
	h := sha256.New()
	for _, s := range []string{c.Username, c.Password.Reveal(), c.IdentityToken.Reveal(), c.RegistryToken.Reveal()} {
		fmt.Fprintf(h, "%d:%s", len(s), s)
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}
