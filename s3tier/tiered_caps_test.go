package s3tier

import (
	"context"
	"testing"
	"time"

	"github.com/snigate/snigate/httpcache"
)

// capStore is a local store with the optional capabilities.
type capStore struct {
	httpcache.Store
	tags    map[string]string
	filling string
}

func (c *capStore) RememberTag(repo, tag, digest string, _ time.Time) error {
	c.tags[repo+":"+tag] = digest
	return nil
}

func (c *capStore) LookupTag(repo, tag string) (string, time.Time, bool) {
	d, ok := c.tags[repo+":"+tag]
	return d, time.Time{}, ok
}

func (c *capStore) Filling(d string) bool { return d == c.filling }

type plainStore struct{}

func (plainStore) Get(context.Context, string) (httpcache.Entry, bool) { return nil, false }
func (plainStore) Fill(context.Context, string, httpcache.FetchFunc) (httpcache.Entry, error) {
	return nil, httpcache.ErrBypass
}
func (plainStore) CountRequest(httpcache.Result) {}

// TestTieredPassesLocalCapabilities: with a shared tier, tags are still
// remembered and fills in flight still seen (the air-gap features of the
// local tier); before, the Tiered store hid them, so a route with
// cache.shared remembered no tags.
func TestTieredPassesLocalCapabilities(t *testing.T) {
	local := &capStore{Store: plainStore{}, tags: map[string]string{}, filling: "sha256:aa"}
	var st httpcache.Store = &Tiered{Local: local}
	ts, ok := st.(httpcache.TagStore)
	if !ok {
		t.Fatal("Tiered is no TagStore")
	}
	if err := ts.RememberTag("team/app", "v1", "sha256:bb", time.Now()); err != nil {
		t.Fatal(err)
	}
	if d, _, ok := ts.LookupTag("team/app", "v1"); !ok || d != "sha256:bb" {
		t.Errorf("LookupTag = %q, %v; want the local tier's sha256:bb", d, ok)
	}
	if fw, ok := st.(httpcache.FillWatcher); !ok || !fw.Filling("sha256:aa") || fw.Filling("sha256:cc") {
		t.Error("Filling does not report the local tier's fills")
	}
	plain := &Tiered{Local: plainStore{}}
	if _, _, ok := plain.LookupTag("team/app", "v1"); ok || plain.Filling("sha256:aa") {
		t.Error("a local store without the capabilities: want nothing remembered, no fill")
	}
}
