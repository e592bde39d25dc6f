package httpbridge

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/snigate/snigate/oci"
)

// ErrOwnRefused is ServeOwn's error for a request the route's policy
// does not allow (a method other than GET or HEAD, a repository outside
// http.repositories).
var ErrOwnRefused = errors.New("refused by the route's policy")

// ServeOwn serves r, a request of the gateway's own (an image the cache
// warms or pins), through the route's chain (Config.Chain, then the
// proxy) as an admitted node request is served, with no node: no
// forwarding headers from a node's address, no audit record, no http
// metrics. r's Host must be the route's registry name; only GET and HEAD
// of a repository http.repositories allows are served. The answer goes
// to w; the error is the failure the chain noted (no upstream, the
// response aborted mid-body).
func (b *Bridge) ServeOwn(w http.ResponseWriter, r *http.Request) (err error) {
	api := oci.ParseURL(r.URL)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return fmt.Errorf("%s %s: %w", r.Method, r.URL.Path, ErrOwnRefused)
	}
	if len(b.policy.repos) > 0 && api.Kind != oci.KindBase && !b.policy.repos.Allows(api.Repository) {
		return fmt.Errorf("repository %q is outside http.repositories: %w", api.Repository, ErrOwnRefused)
	}
	ann := oci.NewAnnotation(api)
	r = r.WithContext(oci.WithAnnotation(r.Context(), ann))
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		if p != http.ErrAbortHandler {
			panic(p)
		}
		err = ann.Facts().Err
		if err == nil {
			err = errors.New("the answer was aborted")
		}
	}()
	b.next.ServeHTTP(w, r)
	return ann.Facts().Err
}
