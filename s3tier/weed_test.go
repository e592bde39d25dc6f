package s3tier

import (
	"testing"
	"time"

	"github.com/snigate/snigate/internal/weedtest"
)

const testBucket = weedtest.Bucket

// weed is the test's SeaweedFS.
type weed struct{ *weedtest.Server }

func startWeed(t *testing.T) *weed { return &weed{weedtest.Start(t)} }

// config is a Tier's Config on this weed, with key files of its own.
func (w *weed) config(t *testing.T, route string) Config {
	t.Helper()
	ak, sk := w.KeyFiles(t)
	return Config{Route: route, Endpoint: w.Endpoint(), Bucket: testBucket, Prefix: "test/",
		AccessKeyFile: ak, SecretKeyFile: sk, CallTimeout: 5 * time.Second, Owner: route}
}
