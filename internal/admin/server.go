package admin

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Timeouts of the admin HTTP server. Scrapes and API calls are small; these
// only bound slow or stuck clients.
const (
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 10 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	maxHeaderBytes           = 16 << 10
)

// Config is what the admin server serves. Each field's zero value is usable.
type Config struct {
	// Upstreams backs /api/upstreams. nil: the runtime API answers 503.
	Upstreams upstreamAPI
	// Answers backs /api/answers (dns.answer_check). nil: it answers 503.
	Answers answerLister
	// Caches backs /api/cache (the http routes' caches). nil: it answers 503.
	Caches cacheAPI
	// Images backs /api/cache/warm, status, export and import (whole
	// images in the caches). nil: they answer 503.
	Images imagesAPI
	// ReadyFunc backs /readyz. nil: ready whenever the server runs.
	ReadyFunc func() bool
	// NotReadyFunc, when set, says what the process does while ReadyFunc
	// says not ready ("starting: taking over from ...", "draining"), for
	// /readyz and GET /api/ready; the readiness switch still comes first.
	// nil: "starting" until ReadyFunc was true once, "draining" after.
	NotReadyFunc func() string
	// Gatherer backs /metrics. nil: /metrics answers 404.
	Gatherer prometheus.Gatherer
	// Logger receives state changes (info) and failures. nil: slog.Default().
	Logger *slog.Logger
	// Metrics counts the admin requests. nil: not counted.
	Metrics *Metrics
	// Hosts are the host names a TCP request's Host header may carry
	// besides IP literals and localhost (see guard): the host name of
	// listen.admin. nil: none.
	Hosts []string
	// HostsFunc, when set, replaces Hosts and is read at each request:
	// the host name of listen.admin as the configuration in force says
	// (a reload may change it). nil: Hosts.
	HostsFunc func() []string
	// MaxConns caps the connections open at once, waiting or in a
	// request (see connLimiter); 0: DefaultMaxConns.
	MaxConns int
	// MaxConnsPerClient caps the connections one client address holds;
	// 0: DefaultMaxConnsPerClient. Unix socket clients share MaxConns.
	MaxConnsPerClient int
	// Runtime backs /api/routes, /api/config, /api/reload and POST
	// /api/ready. nil: they answer 503.
	Runtime runtimeAPI
	// PprofFunc tells, at each request, whether /debug/pprof/ is served
	// (debug.pprof). nil: never; /debug/pprof/ answers 404.
	PprofFunc func() bool
	// Version is what GET /api/version answers, encoded as JSON: the
	// running build's version, revision, Go version. nil: 404.
	Version any
}

// Server is the admin HTTP server: /healthz, /readyz, /metrics and the
// runtime API. It is safe for concurrent use; Serve may be called for
// several listeners.
type Server struct {
	cfg    Config
	log    *slog.Logger
	http   *http.Server
	lim    *connLimiter
	warned sync.Map    // shedding reason -> time of its last Warn (limitWarnEvery)
	everUp atomic.Bool // ReadyFunc has returned true once: not-ready now means draining

	switchOff atomic.Bool // POST /api/ready {"ready":false} was the last call
}

// New builds a Server; it opens and starts nothing.
func New(cfg Config) *Server {
	s := &Server{cfg: cfg, log: cfg.Logger}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.lim = newConnLimiter(cmp.Or(cfg.MaxConns, DefaultMaxConns), cmp.Or(cfg.MaxConnsPerClient, DefaultMaxConnsPerClient),
		cfg.Metrics, s.warnLimited)
	s.http = &http.Server{
		Handler:           reservedOnly(guard(s.routes(), s.hosts)),
		ConnState:         s.lim.connState,
		ConnContext:       connContext,
		ReadHeaderTimeout: DefaultReadHeaderTimeout,
		ReadTimeout:       DefaultReadTimeout,
		WriteTimeout:      DefaultWriteTimeout,
		IdleTimeout:       DefaultIdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	return s
}

// warnLimited logs a Warn for reason at most once per limitWarnEvery;
// the metrics count every one.
func (s *Server) warnLimited(reason, msg string, args ...any) {
	now := time.Now()
	if last, ok := s.warned.Load(reason); ok && now.Sub(last.(time.Time)) < limitWarnEvery {
		return
	}
	s.warned.Store(reason, now)
	s.log.Warn(msg, args...)
}

// hosts are the host names the guard accepts besides IP literals and
// localhost.
func (s *Server) hosts() []string {
	if s.cfg.HostsFunc != nil {
		return s.cfg.HostsFunc()
	}
	return s.cfg.Hosts
}

// Handler returns the server's routes behind the cross-site guard, for
// tests and for embedding.
func (s *Server) Handler() http.Handler { return s.http.Handler }

// Serve answers requests on ln until Shutdown or Close; it closes ln. It
// returns nil after Shutdown or Close, and otherwise the accept error.
func (s *Server) Serve(ln net.Listener) error {
	err := s.http.Serve(&limitListener{Listener: ln, lim: s.lim})
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting, closes the listeners (removing a unix socket
// file) and waits for requests in flight until ctx is done.
func (s *Server) Shutdown(ctx context.Context) error { return s.http.Shutdown(ctx) }

// Close closes the listeners and every connection at once.
func (s *Server) Close() error { return s.http.Close() }

// routes builds the mux. Patterns carry no method so that a wrong method gets
// a JSON 405 with an Allow header (allow) rather than the mux's plain text.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	handle := func(pattern string, h http.Handler) {
		mux.Handle(pattern, s.cfg.Metrics.instrument(pattern, h))
	}
	handle("/healthz", allow(http.HandlerFunc(s.healthz), http.MethodGet))
	handle("/readyz", allow(http.HandlerFunc(s.readyz), http.MethodGet))
	handle("/metrics", allow(s.metricsHandler(), http.MethodGet))
	handle("/api/upstreams", allow(http.HandlerFunc(s.listUpstreams), http.MethodGet))
	handle("/api/upstreams/{route}/{upstream}", allow(http.HandlerFunc(s.setUpstream), http.MethodPost))
	handle("/api/answers", allow(http.HandlerFunc(s.listAnswers), http.MethodGet))
	handle("/api/routes", allow(http.HandlerFunc(s.listRoutes), http.MethodGet))
	handle("/api/config", allow(http.HandlerFunc(s.configStatus), http.MethodGet))
	handle("/api/reload", allow(http.HandlerFunc(s.reload), http.MethodPost))
	handle("/api/ready", allow(http.HandlerFunc(s.ready), http.MethodGet, http.MethodPost))
	handle("/api/version", allow(http.HandlerFunc(s.version), http.MethodGet))
	handle("/debug/pprof/", s.pprof())
	handle("/api/cache", allow(http.HandlerFunc(s.listCaches), http.MethodGet))
	handle("/api/cache/purge", allow(http.HandlerFunc(s.purgeCache), http.MethodPost))
	handle("/api/cache/warm", allow(http.HandlerFunc(s.warmImages), http.MethodPost))
	handle("/api/cache/status", allow(http.HandlerFunc(s.imageStatus), http.MethodPost))
	handle("/api/cache/export", allow(http.HandlerFunc(s.exportImages), http.MethodPost))
	handle("/api/cache/import", allow(http.HandlerFunc(s.importImages), http.MethodPost))
	handle("/api/cache/shared", allow(http.HandlerFunc(s.listSharedCaches), http.MethodGet))
	handle("/", http.HandlerFunc(notFound))
	return mux
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeText(w, http.StatusOK, "ok\n")
}

// readyz answers 200 "ready" or 503 with the reason: the readiness switch
// when POST /api/ready turned it off, else "starting" until ReadyFunc has
// reported ready once, "draining" afterwards.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.cfg.ReadyFunc == nil || s.cfg.ReadyFunc() {
		s.everUp.Store(true)
		writeText(w, http.StatusOK, "ready\n")
		return
	}
	writeText(w, http.StatusServiceUnavailable, "not ready: "+s.notReadyReason()+"\n")
}

func (s *Server) metricsHandler() http.Handler {
	if s.cfg.Gatherer == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusNotFound, "metrics are not enabled in this process")
		})
	}
	return promhttp.HandlerFor(s.cfg.Gatherer, promhttp.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(s.log.Handler(), slog.LevelError),
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
		Timeout:             DefaultWriteTimeout - time.Second,
	})
}

func writeText(w http.ResponseWriter, code int, body string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body))
}
