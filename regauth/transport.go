package regauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/snigate/snigate/internal/ratelog"
	"github.com/snigate/snigate/oci"
)

// Config configures a Transport. Host is required; every other zero value
// has the meaning its doc gives.
type Config struct {
	// Route names the route in metrics and logs.
	Route string
	// Host is the upstream registry's host as requests name it
	// ("registry-1.docker.io", "ghcr.io", "registry.example:5000"). The
	// gateway's Authorization is set only on requests whose URL and Host
	// header name it; requests to any other host go out with no
	// Authorization at all.
	Host string
	// Source gives the credentials; nil means Anonymous.
	Source Source
	// TokenTransport reaches the token service (the gateway gives its
	// redirect-following transport: system roots plus the upstream CA, no
	// client certificate to a foreign host). Nil means
	// http.DefaultTransport.
	TokenTransport http.RoundTripper
	// WriteAllowedFunc reports whether a request may write (push, delete)
	// with the gateway's credentials, i.e. the route's methods allow it.
	// Nil means never: tokens are asked for pull only.
	WriteAllowedFunc func(*http.Request) bool
	// RepositoryFunc returns the repository a request names ("" for
	// none), so that the chain's one parse of the API path decides the
	// token's scope. Nil means RepositoryOf(r.URL.Path).
	RepositoryFunc func(*http.Request) string
	// ErrorTTL is how long a failed token request is remembered; zero
	// means DefaultErrorTTL.
	ErrorTTL time.Duration
	// FetchTimeout bounds one token request; zero means
	// DefaultFetchTimeout.
	FetchTimeout time.Duration
	// Metrics counts token lookups; nil counts nothing.
	Metrics *Metrics
	// Logger gets the rate-limited Warn lines; nil means slog.Default().
	Logger *slog.Logger
}

// Transport is an http.RoundTripper that answers the registry's
// challenges with the gateway's credentials. It drops whatever
// Authorization a request carries, adds a cached token for the scope the
// request needs once it knows the registry's challenge, and on a 401
// with a challenge gets a token for exactly the challenged scope (cut
// down to what the request may do) and sends the request once more.
// When the registry refuses the gateway's credentials RoundTrip returns
// a *RefusedError; other failures to get a token wrap ErrTokenService.
// Safe for concurrent use; one Transport per route, shared by its
// requests.
type Transport struct {
	next   http.RoundTripper
	cfg    Config
	host   string // canonical
	src    Source
	tokens *tokenCache
	known  atomic.Pointer[Challenge] // the last challenge answered
	warn   ratelog.Limiter
}

var _ http.RoundTripper = (*Transport)(nil)

// New returns a Transport that sends requests with next. It starts
// nothing and reads no credentials yet.
func New(next http.RoundTripper, cfg Config) (*Transport, error) {
	if next == nil {
		return nil, errors.New("regauth: no next RoundTripper")
	}
	if cfg.Host == "" {
		return nil, errors.New("regauth: Config.Host is empty")
	}
	if cfg.Source == nil {
		cfg.Source = Anonymous
	}
	if cfg.TokenTransport == nil {
		cfg.TokenTransport = http.DefaultTransport
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	client := &http.Client{Transport: cfg.TokenTransport, CheckRedirect: checkTokenRedirect}
	t := &Transport{next: next, cfg: cfg, host: canonicalHost(cfg.Host), src: cfg.Source}
	t.tokens = newTokenCache(client, cfg.Source, orDefault(cfg.ErrorTTL, DefaultErrorTTL), orDefault(cfg.FetchTimeout, DefaultFetchTimeout))
	return t, nil
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(in *http.Request) (*http.Response, error) {
	req := in.Clone(in.Context())
	req.Header.Del("Authorization")
	if !t.forUpstream(req) {
		return t.next.RoundTrip(req)
	}
	sent := t.preempt(req)
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	ch, ok := pick(ChallengesOf(resp.Header))
	if !ok {
		return resp, nil // a 401 without a challenge the gateway answers
	}
	if !replayable(in) {
		t.known.Store(&ch) // the next request of this kind goes with a token
		return resp, nil
	}
	discard(resp)
	if sent.key != (tokenKey{}) {
		t.tokens.invalidate(sent.key, sent.tok)
	}
	return t.retry(in, &ch)
}

// preempt authorizes req for the challenge the registry last asked
// and was answered, so that it needs no 401 first. Failing that, req
// goes without Authorization and meets the registry's challenge: a
// challenge that cannot be answered (a bad realm, a refusal) is then
// reported for that request only.
func (t *Transport) preempt(req *http.Request) sent {
	s, err := t.authorize(req, t.known.Load(), "", true)
	if err != nil {
		req.Header.Del("Authorization")
		return sent{}
	}
	return s
}

// retry sends in again answering ch; a second 401 is a refusal.
func (t *Transport) retry(in *http.Request, ch *Challenge) (*http.Response, error) {
	req, err := rewind(in)
	if err != nil {
		return nil, err
	}
	req.Header.Del("Authorization")
	if _, err := t.authorize(req, ch, ch.Params["scope"], false); err != nil {
		if req.Body != nil {
			_ = req.Body.Close() // the RoundTripper closes what it was given
		}
		return nil, t.failed(err)
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if resp.StatusCode != http.StatusUnauthorized {
		t.known.Store(ch) // answered: later requests authorize at once
		return resp, nil
	}
	discard(resp)
	t.cfg.Metrics.token(t.cfg.Route, ResultRefused)
	return nil, t.failed(&RefusedError{By: "registry", Status: resp.StatusCode})
}

// sent is what authorize put on a request.
type sent struct {
	key tokenKey
	tok Token
}

// authorize sets req's Authorization for challenge ch (nil: none known
// yet, nothing is set). challenged is the scope the registry asked for,
// "" to use the request's own. A preemptive authorization counts only
// the tokens it got: its failures are counted by the challenge that
// follows.
func (t *Transport) authorize(req *http.Request, ch *Challenge, challenged string, preemptive bool) (sent, error) {
	if ch == nil {
		return sent{}, nil
	}
	cred, err := t.src.Credential(req.Context())
	if err != nil {
		if !preemptive {
			t.cfg.Metrics.token(t.cfg.Route, ResultError)
		}
		return sent{}, fmt.Errorf("credentials for %s: %w", t.cfg.Host, err)
	}
	switch {
	case !cred.RegistryToken.Empty():
		req.Header.Set("Authorization", "Bearer "+cred.RegistryToken.Reveal())
		return sent{}, nil
	case ch.Scheme == "basic":
		if !cred.basic() {
			if !preemptive {
				t.cfg.Metrics.token(t.cfg.Route, ResultRefused)
			}
			return sent{}, &RefusedError{By: "registry (asks for Basic credentials; the gateway has none)", Status: http.StatusUnauthorized}
		}
		req.SetBasicAuth(cred.Username, cred.Password.Reveal())
		return sent{}, nil
	}
	key := tokenKey{realm: ch.Params["realm"], service: ch.Params["service"], scope: t.scope(req, challenged)}
	tok, result, err := t.tokens.get(req.Context(), key)
	if err == nil || !preemptive {
		t.cfg.Metrics.token(t.cfg.Route, result)
	}
	if err != nil {
		return sent{}, err
	}
	req.Header.Set("Authorization", "Bearer "+tok.Value.Reveal())
	return sent{key: key, tok: tok}, nil
}

// scope is the scope a token for req is asked for.
func (t *Transport) scope(req *http.Request, challenged string) string {
	if oci.RequestAPI(req).Kind == oci.KindCatalog {
		return catalogScope(req, challenged)
	}
	write := t.cfg.WriteAllowedFunc != nil && t.cfg.WriteAllowedFunc(req)
	repo := t.repository(req)
	if challenged != "" {
		return grantScope(challenged, req, repo, write)
	}
	return requestScope(req, repo, write)
}

// repository is the repository req names, "" for none.
func (t *Transport) repository(req *http.Request) string {
	if t.cfg.RepositoryFunc != nil {
		return t.cfg.RepositoryFunc(req)
	}
	repo, _ := RepositoryOf(req.URL.Path)
	return repo
}

// failed logs a refusal or token failure (rate-limited) and returns err.
func (t *Transport) failed(err error) error {
	var re *RefusedError
	switch {
	case errors.Is(err, context.Canceled):
		// the node left while its token was being fetched: not worth a line
	case errors.As(err, &re):
		t.warn.Log(t.cfg.Logger, slog.LevelWarn, "refused", "registry refused the gateway's credentials",
			"route", t.cfg.Route, "upstream", t.cfg.Host, "by", re.By, "status", re.Status)
	default:
		t.warn.Log(t.cfg.Logger, slog.LevelWarn, "token", "no token for the registry",
			"route", t.cfg.Route, "upstream", t.cfg.Host, "err", err)
	}
	return err
}

// forUpstream reports whether req goes to the configured host: its URL
// and, when set, its Host header.
func (t *Transport) forUpstream(req *http.Request) bool {
	if canonicalHost(req.URL.Host) != t.host {
		return false
	}
	return req.Host == "" || canonicalHost(req.Host) == t.host
}

// canonicalHost lower-cases h and drops the default https port.
func canonicalHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ":443")
}

// replayable reports whether in can be sent again: no body, or a body
// GetBody can give again.
func replayable(in *http.Request) bool {
	return in.Body == nil || in.Body == http.NoBody || in.GetBody != nil
}

// rewind returns a copy of in with its body from the start.
func rewind(in *http.Request) (*http.Request, error) {
	req := in.Clone(in.Context())
	if in.Body == nil || in.Body == http.NoBody {
		return req, nil
	}
	body, err := in.GetBody()
	if err != nil {
		return nil, fmt.Errorf("rewind request body: %w", err)
	}
	req.Body = body
	return req, nil
}

// maxDiscard bounds what is read of a 401's body to reuse its connection.
const maxDiscard = 4 << 10

func discard(resp *http.Response) {
	_, _ = io.CopyN(io.Discard, resp.Body, maxDiscard)
	_ = resp.Body.Close()
}
