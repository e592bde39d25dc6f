package gateway

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/snigate/snigate/httpbridge"
	"github.com/snigate/snigate/httpcache"
	"github.com/snigate/snigate/internal/certs"
	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/upstream"
)

// auditLogError is an http.audit_log the builders refuse; buildError
// reports it at routes[i].http.audit_log.
type auditLogError struct{ err error }

func (e *auditLogError) Error() string { return e.err.Error() }
func (e *auditLogError) Unwrap() error { return e.err }

// checkAuditLog says why `run` could not open the audit log file path for
// appending ("-", standard output, always can), without creating it:
// a directory, a file or directory not writable by this user.
func checkAuditLog(path string) error {
	if path == "-" {
		return nil
	}
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return fmt.Errorf("%s is a directory: name a file in it, such as %s", path, filepath.Join(path, "audit.log"))
	case err == nil && !fi.Mode().IsRegular():
		return nil // a FIFO or /dev/stdout: opened as it is
	case err == nil:
		if syscall.Access(path, 0x2) != nil { // W_OK
			return fmt.Errorf("%s is not writable by this user: give snigate write access to it, or name another file", path)
		}
		return nil
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("audit log %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	if syscall.Access(dir, 0x2|0x1) != nil { // W_OK|X_OK
		return fmt.Errorf("cannot create %s: the directory %s is not writable by this user: give snigate write access (systemd ReadWritePaths=, LogsDirectory=) or name a file elsewhere", path, dir)
	}
	if err := writableFS(dir); err != nil {
		return fmt.Errorf("cannot create %s: %w", path, err)
	}
	return nil
}

// auditOpenError says what stopped `run` opening the audit log, by the
// same checks as `check`, else as the system said it.
func auditOpenError(path string, err error) error {
	if why := checkAuditLog(path); why != nil {
		return why
	}
	return fmt.Errorf("open audit log %s: %w", path, err)
}

// httpHandler builds the handler of a bridge route with an http: section
// (the HTTP-aware bridge): the node's HTTP is served by the gateway and
// sent to the route's upstreams over a pool of connections that present
// the edge identity, from the same client side (ct) as every other
// upstream connection of the route. The route's audit log is opened
// (joined, when another route names the same file), except by `check`,
// which opens no file for writing.
func (g *Gateway) httpHandler(gen *generation, cfg *config.Config, rc *config.Route, ct *certs.ClientTLS, pool *upstream.Pool) (*httpbridge.Bridge, error) {
	h := rc.HTTP
	var audit *httpbridge.AuditLog
	switch {
	case h.AuditLog == "":
	case g.dryRun:
		if err := checkAuditLog(h.AuditLog); err != nil {
			return nil, &auditLogError{err: err}
		}
	default:
		var err error
		if audit, err = httpbridge.OpenAudit(h.AuditLog, g.log, g.metrics.http); err != nil {
			return nil, &auditLogError{err: auditOpenError(h.AuditLog, err)}
		}
		gen.audits = append(gen.audits, audit)
	}
	chain, err := g.httpChain(rc)
	if err != nil {
		return nil, err
	}
	b, err := httpbridge.New(httpbridge.Config{
		Route:            rc.Name,
		Upstreams:        pool,
		UpstreamTLS:      checkClientTLS(ct, rc),
		UpstreamIdentity: ct.Identity,
		ConnectTimeout:   cfg.Timeouts.Connect,
		Forwarded:        h.Forwarded,
		Methods:          h.Methods,
		Repositories:     h.Repositories,
		Redirects:        h.Redirects,
		RedirectRoots:    redirectRoots(rc),
		RedirectAllow:    h.RedirectAllow,
		Chain:            chain,
		Audit:            audit,
		Metrics:          g.metrics.http,
		Log:              g.log,
	})
	if err != nil {
		return nil, err
	}
	gen.bridges = append(gen.bridges, b)
	return b, nil
}

// httpChain composes the links of the route's HTTP chain between the
// bridge's policy and its proxy: the route's http.cache over its store,
// kept across reloads; nil without http.cache. `check` opens no store (a
// running snigate holds its directory's lock): it checks that the
// directory can be used.
func (g *Gateway) httpChain(rc *config.Route) (httpbridge.Chain, error) {
	c := rc.HTTP.Cache
	if c == nil {
		return nil, nil
	}
	if g.dryRun {
		if err := checkCacheDir(c.Dir); err != nil {
			return nil, &cacheDirError{err: err}
		}
		return nil, nil
	}
	store, err := g.caches.take(rc.Name, c)
	if err != nil {
		return nil, err
	}
	hc, err := httpcache.New(httpcache.Config{Route: rc.Name, Store: cacheStore{c: store}, Offline: c.Offline, Log: g.log})
	if err != nil {
		return nil, err
	}
	return hc.Wrap, nil
}

// redirectRoots is what a followed redirect trusts: the system roots plus
// upstream_tls.ca as the generation reads it (a storage host or CDN is
// usually signed by a public CA; a private one goes into upstream_tls.ca,
// which config has checked).
func redirectRoots(rc *config.Route) *x509.CertPool {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if rc.UpstreamTLS.CA != "" {
		if pem, err := os.ReadFile(rc.UpstreamTLS.CA); err == nil {
			pool.AppendCertsFromPEM(pem)
		}
	}
	return pool
}

// retire ends the generation's HTTP bridges (their node connections close
// at the next request boundary, idle upstream connections now) and
// releases its audit logs, once a newer generation is in force or the
// gateway has drained.
func (gen *generation) retire() {
	for _, b := range gen.bridges {
		b.Close()
	}
	for _, a := range gen.audits {
		a.Close()
	}
	gen.bridges, gen.audits = nil, nil
}

// reopenAudits reopens the generation's audit log files (SIGHUP, reload):
// logrotate moves a file away, then signals.
func (gen *generation) reopenAudits() {
	for _, a := range gen.audits {
		a.Reopen()
	}
}
