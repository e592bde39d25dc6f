package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The fleet's nodes: each a namespace of its own linked to one gateway
// (node k on 10.77.(60+k).0/24, the gateway at .1), whose /etc/hosts names
// that gateway registryHost, so that skopeo pulls through it as a node
// configured with that gateway would.
const (
	fleetNodes    = 8 // nodes pulling at once, spread over the fleetSize gateways
	fleetNodeBase = 60
)

// fleetNode is one node of the fleet world.
type fleetNode struct {
	ns *netns
	gw int // the gateway it pulls through
}

// addNode creates node k, linked to gateway gw.
func (f *fleet) addNode(k, gw int) error {
	ns, err := newNetns("fleet-n" + strconv.Itoa(k))
	if ns != nil {
		f.nsList = append(f.nsList, ns)
	}
	if err != nil {
		return err
	}
	net := "10.77." + strconv.Itoa(fleetNodeBase+k) + "."
	if err := vethPair(ns, "to-gw", []string{net + "2/24"}, f.gws[gw].ns, "to-node-"+strconv.Itoa(k), []string{net + "1/24"}); err != nil {
		return err
	}
	if err := ns.writeEtc("hosts", "127.0.0.1 localhost\n"+net+"1 "+registryHost+"\n"); err != nil {
		return err
	}
	f.nodes = append(f.nodes, &fleetNode{ns: ns, gw: gw})
	return nil
}

// pullNodes runs a skopeo pull of img on each of nodes at once (one
// process per node, through its gateway) into an OCI layout of its own;
// every one must end with the pushed manifest and the layer's exact bytes.
func (f *fleet) pullNodes(t *testing.T, img *cachedImage, nodes []*fleetNode) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(nodes))
	for i, n := range nodes {
		dest := filepath.Join(t.TempDir(), "pulled")
		wg.Go(func() {
			if err := f.pull(n, img, dest); err != nil {
				errs <- fmt.Errorf("node %d (gateway %d): %w", i, n.gw, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
}

// pull copies img from registryHost, as node n resolves it, to the OCI
// layout dest, and checks what it wrote.
func (f *fleet) pull(n *fleetNode, img *cachedImage, dest string) error {
	r := runCmd(skopeo(n.ns, "copy", "--src-cert-dir", f.w.gatewayCerts,
		"docker://"+registryHost+"/"+cacheRepo+":"+cacheTag, "oci:"+dest+":"+cacheTag))
	if r.err != nil {
		return fmt.Errorf("skopeo copy failed:\n%s\n%s", r, tailFile(f.gws[n.gw].log, 20))
	}
	if got, err := ociIndexDigest(dest, cacheTag); err != nil || got != img.digest {
		return fmt.Errorf("manifest digest %s (%v), pushed %s", got, err, img.digest)
	}
	return fileDigestIs(filepath.Join(dest, "blobs", "sha256", strings.TrimPrefix(img.layer, "sha256:")), img.layer)
}

// fileDigestIs checks that path's content has digest want (sha256:...).
func fileDigestIs(path, want string) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fh); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("%s has digest %s, want %s", path, got, want)
	}
	return nil
}

// metric is the sum of the series of name in gateway i's /metrics whose
// labels include every one of labels (`key="value"`).
func (f *fleet) metric(t *testing.T, i int, name string, labels ...string) float64 {
	t.Helper()
	status, body, err := f.gws[i].admin("/metrics")
	if err != nil || status != 200 {
		t.Fatalf("gateway %d: GET /metrics: %d %v", i, status, err)
	}
	return sumSeries(string(body), name, labels...)
}

// sumSeries sums the samples of name in a Prometheus text exposition
// whose labels include every one of labels.
func sumSeries(text, name string, labels ...string) float64 {
	var sum float64
	for _, line := range strings.Split(text, "\n") {
		series, value, ok := strings.Cut(line, " ")
		if !ok || (series != name && !strings.HasPrefix(series, name+"{")) {
			continue
		}
		match := true
		for _, l := range labels {
			match = match && strings.Contains(series, l)
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil && match {
			sum += v
		}
	}
	return sum
}

// fleetMetric is metric summed over the gateways that run.
func (f *fleet) fleetMetric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	var sum float64
	for i, g := range f.gws {
		if g.proc != nil && g.proc.running() {
			sum += f.metric(t, i, name, labels...)
		}
	}
	return sum
}
