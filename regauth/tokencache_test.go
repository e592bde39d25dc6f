package regauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeTokenService answers token requests in memory: tok-1, tok-2, ...
// with expiresIn (0: none), or status when it is not 200.
type fakeTokenService struct {
	mu        sync.Mutex
	n         int
	status    int
	expiresIn int
	release   chan struct{} // when set, each request waits for it
	last      *http.Request
}

func (f *fakeTokenService) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	f.n++
	n, status, exp, release := f.n, f.status, f.expiresIn, f.release
	f.last = r
	f.mu.Unlock()
	if release != nil {
		<-release
	}
	body := fmt.Sprintf(`{"token":"tok-%d"`, n)
	if exp > 0 {
		body += fmt.Sprintf(`,"expires_in":%d`, exp)
	}
	body += `,"issued_at":"2026-01-01T00:00:00Z"}`
	if status == 0 {
		status = http.StatusOK
	}
	return &http.Response{StatusCode: status, Body: io.NopCloser(strings.NewReader(body)), Header: http.Header{}, Request: r}, nil
}

func (f *fakeTokenService) requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

func (f *fakeTokenService) set(status, expiresIn int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status, f.expiresIn = status, expiresIn
}

type sourceFunc func(context.Context) (Credential, error)

func (f sourceFunc) Credential(ctx context.Context) (Credential, error) { return f(ctx) }

var testKey = tokenKey{realm: "https://auth.example/token", service: "registry.example", scope: "repository:a:pull"}

func newTestCache(svc *fakeTokenService, src Source) *tokenCache {
	if src == nil {
		src = Anonymous
	}
	return newTokenCache(&http.Client{Transport: svc}, src, DefaultErrorTTL, DefaultFetchTimeout)
}

// mustGet asks c for testKey and checks the token and the result.
func mustGet(t *testing.T, c *tokenCache, wantTok, wantResult string) {
	t.Helper()
	tok, result, err := c.get(context.Background(), testKey)
	if err != nil || tok.Value.Reveal() != wantTok || result != wantResult {
		t.Fatalf("get = %q, %s, %v; want %q, %s", tok.Value.Reveal(), result, err, wantTok, wantResult)
	}
}

func TestTokenCacheOneFetchForConcurrentRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &fakeTokenService{expiresIn: 300, release: make(chan struct{})}
		c := newTestCache(svc, nil)
		results := make(chan string, 50)
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				tok, result, err := c.get(context.Background(), testKey)
				if err != nil || tok.Value.Reveal() != "tok-1" {
					t.Errorf("get = %q, %v", tok.Value.Reveal(), err)
				}
				results <- result
			})
		}
		synctest.Wait() // one in the token service, 49 waiting for it
		close(svc.release)
		wg.Wait()
		close(results)
		count := map[string]int{}
		for r := range results {
			count[r]++
		}
		if svc.requests() != 1 || count[ResultFetched] != 1 || count[ResultCached] != 49 {
			t.Fatalf("%d token requests, results %v; want 1 request, 1 fetched, 49 cached", svc.requests(), count)
		}
	})
}

func TestTokenCacheRenewsBeforeExpiry(t *testing.T) {
	tests := []struct {
		name      string
		expiresIn int
		renewAt   time.Duration
	}{
		{name: "default lifetime of 60 s renewed at 30 s", expiresIn: 0, renewAt: 30 * time.Second},
		{name: "300 s renewed 30 s before", expiresIn: 300, renewAt: 270 * time.Second},
		{name: "an hour renewed at 90 %", expiresIn: 3600, renewAt: 3240 * time.Second},
		{name: "a 10 s token renewed at half", expiresIn: 10, renewAt: 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				svc := &fakeTokenService{expiresIn: tt.expiresIn}
				c := newTestCache(svc, nil)
				mustGet(t, c, "tok-1", ResultFetched)
				time.Sleep(tt.renewAt - time.Second)
				mustGet(t, c, "tok-1", ResultCached)
				time.Sleep(time.Second)
				mustGet(t, c, "tok-2", ResultFetched)
				mustGet(t, c, "tok-2", ResultCached)
			})
		})
	}
}

func TestTokenCacheKeysAreSeparate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &fakeTokenService{expiresIn: 300}
		c := newTestCache(svc, nil)
		mustGet(t, c, "tok-1", ResultFetched)
		other := testKey
		other.scope = "repository:b:pull"
		if tok, _, _ := c.get(context.Background(), other); tok.Value.Reveal() != "tok-2" {
			t.Fatalf("another scope got %q, want its own token", tok.Value.Reveal())
		}
		mustGet(t, c, "tok-1", ResultCached)
	})
}

func TestTokenCacheRemembersFailuresBriefly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &fakeTokenService{status: http.StatusServiceUnavailable}
		c := newTestCache(svc, nil)
		for range 10 {
			_, result, err := c.get(context.Background(), testKey)
			if !errors.Is(err, ErrTokenService) || result != ResultError {
				t.Fatalf("get = %s, %v; want error wrapping ErrTokenService", result, err)
			}
		}
		if n := svc.requests(); n != 1 {
			t.Fatalf("%d token requests in the error window, want 1", n)
		}
		svc.set(http.StatusOK, 300)
		time.Sleep(DefaultErrorTTL)
		mustGet(t, c, "tok-2", ResultFetched)
	})
}

func TestTokenCacheRefusalEndsWhenCredentialsChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		password := "wrong"
		src := sourceFunc(func(context.Context) (Credential, error) {
			mu.Lock()
			defer mu.Unlock()
			return Credential{Username: "robot", Password: NewSecret(password)}, nil
		})
		svc := &fakeTokenService{status: http.StatusUnauthorized}
		c := newTestCache(svc, src)
		for range 3 {
			_, result, err := c.get(context.Background(), testKey)
			var re *RefusedError
			if !errors.As(err, &re) || result != ResultRefused || re.Status != http.StatusUnauthorized {
				t.Fatalf("get = %s, %v; want a RefusedError", result, err)
			}
			assertNoSecret(t, err, "wrong")
		}
		if svc.requests() != 2 {
			t.Fatalf("%d token requests, want 2: the password grant and its GET, once", svc.requests())
		}
		mu.Lock()
		password = "right"
		mu.Unlock()
		svc.set(http.StatusOK, 300)
		mustGet(t, c, "tok-3", ResultFetched) // at once, not after the error window (tok-2 was the refused GET)
		if call, _ := describeTokenRequest(svc.last); call != "POST password robot:right" {
			t.Errorf("token request %q, want the password grant of robot/right", call)
		}
	})
}

func TestTokenCacheKeepsValidTokenWhenRenewalFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &fakeTokenService{expiresIn: 300}
		c := newTestCache(svc, nil)
		mustGet(t, c, "tok-1", ResultFetched)
		svc.set(http.StatusBadGateway, 300)
		time.Sleep(280 * time.Second)
		mustGet(t, c, "tok-1", ResultCached)
		time.Sleep(20 * time.Second) // expired now
		if _, result, err := c.get(context.Background(), testKey); err == nil || result != ResultError {
			t.Fatalf("an expired token was served: %s, %v", result, err)
		}
	})
}

func TestTokenCacheWaiterLeavesAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := &fakeTokenService{expiresIn: 300, release: make(chan struct{})}
		c := newTestCache(svc, nil)
		first := make(chan error, 1)
		go func() { _, _, err := c.get(context.Background(), testKey); first <- err }()
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		second := make(chan error, 1)
		go func() { _, _, err := c.get(ctx, testKey); second <- err }()
		synctest.Wait()
		cancel()
		if err := <-second; !errors.Is(err, context.Canceled) {
			t.Fatalf("a waiter that left got %v, want context.Canceled", err)
		}
		close(svc.release)
		if err := <-first; err != nil {
			t.Fatalf("the fetching request failed: %v", err)
		}
	})
}

func TestReadToken(t *testing.T) {
	now := time.Unix(1000, 0)
	tests := []struct {
		name, body, want string
		life             time.Duration
		wantErr          bool
	}{
		{name: "token", body: `{"token":"a","expires_in":120}`, want: "a", life: 120 * time.Second},
		{name: "access_token", body: `{"access_token":"b"}`, want: "b", life: DefaultTokenLifetime},
		{name: "token preferred", body: `{"token":"a","access_token":"b"}`, want: "a", life: DefaultTokenLifetime},
		{name: "huge expires_in capped", body: `{"token":"a","expires_in":99999999999}`, want: "a", life: MaxTokenLifetime},
		{name: "negative expires_in", body: `{"token":"a","expires_in":-5}`, want: "a", life: DefaultTokenLifetime},
		{name: "no token", body: `{"expires_in":60}`, wantErr: true},
		{name: "not JSON", body: `<html>`, wantErr: true},
		{name: "too large", body: `{"token":"` + strings.Repeat("a", MaxTokenResponse) + `"}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, _, err := readToken(strings.NewReader(tt.body), testKey, now)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err != nil {
				if !errors.Is(err, ErrTokenService) {
					t.Errorf("err %v does not wrap ErrTokenService", err)
				}
				return
			}
			if tok.Value.Reveal() != tt.want || tok.Expires.Sub(now) != tt.life || !tok.Renew.Before(tok.Expires) {
				t.Errorf("got %q life %v renew %v", tok.Value.Reveal(), tok.Expires.Sub(now), tok.Renew.Sub(now))
			}
		})
	}
}
