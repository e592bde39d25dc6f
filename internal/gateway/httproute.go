package gateway

import (
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"

	"github.com/snigate/snigate/httpbridge"
	"github.com/snigate/snigate/httpcache"
	"github.com/snigate/snigate/internal/certs"
	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/s3tier"
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
// upstream connection of the route. The route's audit log comes from the
// builder's opener into the generation's audit files (run: opened, or
// joined when another route names the same file; check: checked, not
// opened).
func (b *builder) httpHandler(gen *generation, cfg *config.Config, rc *config.Route, ct *certs.ClientTLS, pool *upstream.Pool) (*httpbridge.Bridge, error) {
	h := rc.HTTP
	var audit *httpbridge.AuditLog
	if h.AuditLog != "" {
		var err error
		if audit, err = b.open.openAudit(gen.audits, h.AuditLog); err != nil {
			return nil, &auditLogError{err: err}
		}
	}
	chain, err := b.httpChain(gen, rc)
	if err != nil {
		return nil, err
	}
	if chain, err = b.verifyChain(rc, chain); err != nil {
		return nil, err
	}
	auth, err := b.httpAuth(rc)
	if err != nil {
		return nil, err
	}
	br, err := httpbridge.New(httpbridge.Config{
		Route:            rc.Name,
		Upstreams:        pool,
		UpstreamTLS:      checkClientTLS(ct, rc),
		UpstreamIdentity: ct.Identity,
		ConnectTimeout:   cfg.Timeouts.Connect,
		Forwarded:        h.Forwarded,
		Methods:          h.Methods,
		Repositories:     h.Repositories,
		Redirects:        h.Redirects,
		UpstreamProtocol: h.UpstreamProtocol,
		RedirectRoots:    redirectRoots(rc),
		RedirectAllow:    h.RedirectAllow,
		Chain:            chain,
		AuthFunc:         auth,
		Audit:            audit,
		Metrics:          b.metrics.http,
		Log:              b.log,
	})
	if err != nil {
		return nil, err
	}
	gen.bridges[rc.Name] = br
	gen.pinImages(rc, b.log)
	return br, nil
}

// httpChain composes the links of the route's HTTP chain between the
// bridge's policy and its proxy: the route's http.cache over the store
// the generation records for it (filled in by generation.Adopt; check
// opens none, and its requests would bypass); nil without http.cache.
// What would stop the store or the shared tier is refused here, as
// check and run say it alike.
func (b *builder) httpChain(gen *generation, rc *config.Route) (httpbridge.Chain, error) {
	c := rc.HTTP.Cache
	if c == nil {
		return nil, nil
	}
	if err := b.open.checkStore(c); err != nil {
		return nil, err
	}
	if c.Shared != nil {
		if err := checkShared(rc.Name, c.Shared); err != nil {
			return nil, err
		}
	}
	hc, err := httpcache.New(httpcache.Config{Route: rc.Name, Store: gen.addStore(rc, b), Offline: c.Offline, Tags: c.Tags, Log: b.log})
	if err != nil {
		return nil, err
	}
	return hc.Wrap, nil
}

// checkShared builds the route's tier apart (reading its files, sending
// nothing, counting nothing) to say what Adopt would refuse.
func checkShared(route string, sc *config.SharedCache) error {
	t, err := s3tier.New(tierConfig(route, sc, slog.New(slog.DiscardHandler), nil))
	if err != nil {
		return &sharedTierError{err: err}
	}
	t.Close()
	return nil
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
