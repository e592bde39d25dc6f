package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"strings"
	"time"

	"github.com/snigate/snigate/internal/admin"
)

// inForce is the configuration file content in force and when it was put
// in force (GET /api/config).
type inForce struct {
	sum [sha256.Size]byte
	at  time.Time
}

// configInForce records that the file last read is in force since at.
func (g *Gateway) configInForce(at time.Time) {
	g.inForce.Store(&inForce{sum: *g.loadedSum.Load(), at: at})
}

// Ready reports whether the gateway takes new work: its listeners are up,
// it is not draining, and the readiness switch (POST /api/ready) is on.
// /readyz and snigate_ready follow it, and so do the gateway's own
// addresses in its DNS answers with dns.answer_check (left out by the
// drain, and by the switch while it is off).
func (g *Gateway) Ready() bool { return g.ready.Load() && !g.switchOff.Load() }

// notReadyReason says what the gateway does while it is not ready, for
// /readyz (notReadyText).
func (g *Gateway) notReadyReason() string {
	return notReadyText(g.wasReady.Load(), g.inherit.HasParent())
}

// notReadyText: a gateway drains once it has been ready; before, it
// starts, and a process started by an upgrade (SIGUSR2) says so, since
// the previous process is the one serving meanwhile.
func notReadyText(wasReady, tookOver bool) string {
	switch {
	case wasReady:
		return "draining"
	case tookOver:
		return "starting: taking over the listening sockets from the previous process (SIGUSR2 upgrade), which serves until this one is ready"
	}
	return "starting"
}

// SetReadySwitch turns the readiness switch on or off (the admin API): off,
// the gateway reports not ready while it keeps serving every connection,
// so that DNS answer checks and load balancers move new clients away
// before maintenance. The switch belongs to this process: a restart or an
// upgrade starts with it on.
func (g *Gateway) SetReadySwitch(on bool) {
	g.switchOff.Store(!on)
	g.readyChanged()
	if g.Ready() {
		g.takeBackOwnAnswers()
	} else {
		g.leaveOutOwnAnswers()
	}
}

// readyChanged publishes Ready after a change of either of its parts.
func (g *Gateway) readyChanged() {
	if g.Ready() {
		g.metrics.ready.Set(1)
	} else {
		g.metrics.ready.Set(0)
	}
}

// Routes lists the routes in force with their serving certificates (the
// admin API).
func (g *Gateway) Routes() []admin.Route {
	gen := g.gen.Load()
	out := make([]admin.Route, 0, len(gen.cfg.Routes))
	for _, rc := range gen.cfg.Routes {
		r := admin.Route{
			Route: rc.Name, Names: rc.SNI, Mode: rc.Mode, Balance: rc.Balance,
			Upstreams: rc.Upstreams, Default: rc.Name == gen.cfg.DefaultRoute,
		}
		if sr := gen.routes.Route(rc.Name); sr != nil && sr.Serve != nil {
			r.Cert = servingCert(sr.Serve)
		}
		out = append(out, r)
	}
	return out
}

// servingCert describes the certificate a serving source holds now: a
// key pair's leaf, or the CA a minter signs with.
func servingCert(src any) *admin.Cert {
	describe := func(source string, c *x509.Certificate) *admin.Cert {
		if c == nil {
			return nil
		}
		return &admin.Cert{Source: source, Subject: c.Subject.String(), DNSNames: c.DNSNames, NotAfter: c.NotAfter.UTC()}
	}
	switch s := src.(type) {
	case interface{ Leaf() *x509.Certificate }:
		return describe("file", s.Leaf())
	case interface{ CA() *x509.Certificate }:
		return describe("ca", s.CA())
	}
	return nil
}

// ConfigStatus is the configuration in force and the last reload's
// outcome (the admin API).
func (g *Gateway) ConfigStatus() admin.ConfigStatus {
	f := g.inForce.Load()
	return admin.ConfigStatus{
		File:       g.opts.ConfigFile,
		SHA256:     hex.EncodeToString(f.sum[:]),
		LoadedAt:   f.at.UTC(),
		Routes:     len(g.gen.Load().cfg.Routes),
		LastReload: g.lastReload.Load(),
	}
}

// ReloadConfig reloads the configuration file now (the admin API). The
// new generation runs under the gateway's own context, not the request's.
func (g *Gateway) ReloadConfig(_ context.Context, reason string) admin.ReloadResult {
	ctx := context.Background()
	if c := g.runCtx.Load(); c != nil {
		ctx = *c
	}
	g.Reload(ctx, reason)
	return *g.lastReload.Load()
}

// recordReload keeps the outcome of a reload for GET /api/config.
func (g *Gateway) recordReload(reason string, err error, at time.Time) {
	res := &admin.ReloadResult{Result: admin.ReloadSuccess, Reason: reason, At: at.UTC()}
	if err != nil {
		res.Result, res.Errors = admin.ReloadFailure, checkLines(err)
	}
	g.lastReload.Store(res)
}

// checkLines are the lines `snigate check` prints for err: one per
// problem of a config.ErrorList (file:line: key: what to change).
func checkLines(err error) []string { return strings.Split(err.Error(), "\n") }
