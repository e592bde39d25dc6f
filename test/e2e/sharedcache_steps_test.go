package e2e

import (
	"strings"
	"testing"
)

// The steps of TestSharedCacheFleet, in order; each starts from the state
// the previous one left.

// checkFleetPull: the 8 nodes pull through the three gateways at once on
// empty caches; the registry logs one GET of the layer, the uplink and the
// gateways' upstream bytes stay under 1.3x it.
func (f *fleet) checkFleetPull(t *testing.T, img *cachedImage) {
	w := f.w
	before := f.uplinkRxBytes(t)
	f.pullNodes(t, img, f.nodes[:fleetNodes])
	w.waitRegistryRequests(t, "GET", img.layerURI, 1)
	if n := w.registryRequests(t, "GET", img.layerURI); n != 1 {
		t.Errorf("the registry logged %d GETs of the layer for the fleet, want 1", n)
	}
	up := f.uplinkRxBytes(t) - before
	t.Logf("the fleet's uplink carried %d bytes for a %d-byte layer (%.2fx)", up, img.size, float64(up)/float64(img.size))
	if float64(up) > uplinkFactor*float64(img.size) {
		t.Errorf("uplink carried %d bytes, more than %.1fx the layer (%d)", up, uplinkFactor, img.size)
	}
	counted := f.fleetMetric(t, "snigate_cache_upstream_bytes_total", `route="registry"`)
	if counted < float64(img.size) || counted > uplinkFactor*float64(img.size) {
		t.Errorf("the gateways' snigate_cache_upstream_bytes_total add up to %.0f, want the layer's %d (< %.1fx)",
			counted, img.size, uplinkFactor)
	}
	if read := f.fleetMetric(t, "snigate_cache_shared_bytes_total", `direction="read"`); read < float64(img.size) {
		t.Errorf("the gateways read %.0f bytes from the bucket, want at least the layer's %d", read, img.size)
	}
}

// checkFourthGateway: the fourth gateway, started empty, serves the layer
// to its node from the bucket, without a registry GET of it.
func (f *fleet) checkFourthGateway(t *testing.T, img *cachedImage) {
	w := f.w
	before := f.uplinkRxBytes(t)
	if err := f.gws[fleetFourth].start(); err != nil {
		t.Fatal(err)
	}
	f.pullNodes(t, img, f.nodes[fleetNodes:])
	if n := w.registryRequests(t, "GET", img.layerURI); n != 1 {
		t.Errorf("the registry logged %d GETs of the layer, want still 1", n)
	}
	if up := f.uplinkRxBytes(t) - before; up > img.size/10 {
		t.Errorf("the uplink carried %d bytes for the fourth gateway's pull of a %d-byte layer", up, img.size)
	}
	if n := f.metric(t, fleetFourth, "snigate_cache_upstream_bytes_total"); n > float64(img.size/10) {
		t.Errorf("the fourth gateway counts %.0f upstream bytes, want little beside the %d-byte layer", n, img.size)
	}
	if !f.stored(fleetFourth, img.layer) {
		t.Error("the fourth gateway's local tier does not hold the layer it read from the bucket")
	}
}

// checkCorruptObject: an object corrupted in the bucket is not served, is
// counted and logged, and is replaced.
func (f *fleet) checkCorruptObject(t *testing.T, img *cachedImage) {
	w := f.w
	f.corruptObject(t, img)
	f.restartEmpty(t, fleetSize-1)
	if err := f.getLayer(fleetSize-1, img); err != nil {
		t.Fatal(err)
	}
	w.waitRegistryRequests(t, "GET", img.layerURI, 2)
	f.waitObject(t, img)
	if n := f.metric(t, fleetSize-1, "snigate_cache_shared_requests_total", `result="error"`); n < 1 {
		t.Error("the corrupt object was not counted as an error of the shared tier")
	}
	if !strings.Contains(readFile(t, f.gws[fleetSize-1].log), `"reason":"corrupt"`) {
		t.Error("no log line of the corrupt object")
	}
	f.checkDirWhole(t, fleetSize-1)
}

// checkStoreOutage: with SeaweedFS killed a pull goes to the registry (the
// failure counted); restarted, the store is used again.
func (f *fleet) checkStoreOutage(t *testing.T, img *cachedImage) {
	w := f.w
	f.weed.kill()
	f.restartEmpty(t, fleetSize-1)
	if err := f.getLayer(fleetSize-1, img); err != nil {
		t.Fatal(err)
	}
	w.waitRegistryRequests(t, "GET", img.layerURI, 3)
	if n := f.metric(t, fleetSize-1, "snigate_cache_shared_requests_total", `result="error"`); n < 1 {
		t.Error("the store's outage was not counted")
	}
	f.startWeed(t)
	f.restartEmpty(t, fleetSize-1)
	if err := f.getLayer(fleetSize-1, img); err != nil {
		t.Fatal(err)
	}
	if n := w.registryRequests(t, "GET", img.layerURI); n != 3 {
		t.Errorf("the registry logged %d GETs of the layer after the store came back, want still 3", n)
	}
}

// checkKilledMidFill: a gateway SIGKILLed mid-fill; the pulls through the
// others complete, one of them takes the lease over, and nothing partial
// is stored in the bucket or any cache directory.
func (f *fleet) checkKilledMidFill(t *testing.T, img *cachedImage) {
	w := f.w
	img2 := w.pushCachedImage(t)
	f.killMidFill(t, img2)
	f.waitObject(t, img2)
	w.waitRegistryRequests(t, "GET", img2.layerURI, 2)
	if n := w.registryRequests(t, "GET", img2.layerURI); n != 2 {
		t.Errorf("the registry logged %d GETs of the layer, want 2 (the dead gateway's, the takeover's)", n)
	}
	f.checkBucketWhole(t)
	for i := range f.gws {
		f.checkDirWhole(t, i)
	}
	if err := f.gws[0].start(); err != nil { // the killed gateway, its fill's file left in tmp/
		t.Fatal(err)
	}
	if err := f.getLayer(0, img2); err != nil {
		t.Fatal(err)
	}
	if n := w.registryRequests(t, "GET", img2.layerURI); n != 2 {
		t.Errorf("the restarted gateway fetched the layer again: %d registry GETs, want 2", n)
	}
	f.checkDirWhole(t, 0)
}
