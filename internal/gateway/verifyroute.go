package gateway

import (
	"fmt"
	"net/http"
	"path/filepath"

	"github.com/snigate/snigate/httpbridge"
	"github.com/snigate/snigate/httpverify"
	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/oci"
)

// hasVerify reports whether rc has a signature policy (http.verify).
func hasVerify(rc config.Route) bool { return rc.HTTP != nil && rc.HTTP.Verify != nil }

// verifyChain puts the route's signature policy (http.verify) in front of
// the links of chain (policy -> verify -> cache -> proxy), so that cached
// content is gated too; chain unchanged without verify. Its decisions
// are kept in the cache directory when the route has one.
func (b *builder) verifyChain(rc *config.Route, chain httpbridge.Chain) (httpbridge.Chain, error) {
	if !hasVerify(*rc) {
		return chain, nil
	}
	v, err := b.newVerify(rc)
	if err != nil {
		return nil, err
	}
	return func(next http.Handler, upstream http.RoundTripper) http.Handler {
		if chain != nil {
			next = chain(next, upstream)
		}
		return v.Wrap(next, upstream)
	}, nil
}

// newVerify builds the route's httpverify.Verify from http.verify.
func (b *builder) newVerify(rc *config.Route) (*httpverify.Verify, error) {
	vc := rc.HTTP.Verify
	repos, err := oci.NewRepoAllowList(vc.Repositories)
	if err != nil {
		return nil, fmt.Errorf("http.verify.repositories: %w", err)
	}
	keys := make([]httpverify.Key, 0, len(vc.CosignKeys))
	for _, path := range vc.CosignKeys {
		k, err := httpverify.LoadKey(path)
		if err != nil {
			return nil, fmt.Errorf("http.verify.cosign.keys: %w", err)
		}
		keys = append(keys, k)
	}
	var notation *httpverify.Notation
	if n := vc.Notation; n != nil {
		if notation, err = httpverify.LoadNotation(n.TrustStore, n.TrustPolicy); err != nil {
			return nil, fmt.Errorf("http.verify.notation: %w", err)
		}
	}
	var decisions string
	if c := rc.HTTP.Cache; c != nil {
		decisions = filepath.Join(c.Dir, httpverify.DecisionsFile)
	}
	return httpverify.New(httpverify.Config{Route: rc.Name, Mode: vc.Mode, Repositories: repos, Keys: keys, Notation: notation,
		DecisionsPath: decisions, Metrics: b.metrics.verify, Log: b.log})
}
