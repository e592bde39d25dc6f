package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/miekg/dns"
)

// The several-gateways world (TestSeveralGateways), beside the shared one:
//
//	              ┌── 10.77.3.0/24 ── gw-a (snigate) ── 10.77.5.0/24 ──┐
//	node2 ────────┤                    │ 10.77.7.0/24                    ├── registry (A, B)
//	resolv.conf:  └── 10.77.4.0/24 ── gw-b (snigate) ── 10.77.6.0/24 ──┘
//	gw-a, gw-b
//
// Each gateway runs its responder with dns.answer [gw-a, gw-b] and
// dns.answer_check; they check each other over 10.77.7.0/24 and reach the
// registries (10.77.2.x) through their own link to the registry namespace.
const (
	gwAAddr = "10.77.3.1"
	gwBAddr = "10.77.4.1"

	// answer_check of both gateways: a dead one leaves the answers at the
	// answerFall-th failed check, answerInterval apart.
	answerInterval = time.Second
	answerFall     = 2
	answerTTL      = "1s"
	bigRepo        = "e2e/big"
	bigLayerBytes  = 24 << 20 // larger than every socket buffer on the way
)

// gatewayPair is the world of TestSeveralGateways.
type gatewayPair struct {
	w      *world
	nsList []*netns
	node   *netns
	a, b   *gateway
}

// newGatewayPair builds the namespaces and starts both gateways; t's
// cleanup stops them and removes the namespaces.
func newGatewayPair(t *testing.T, w *world) *gatewayPair {
	t.Helper()
	p := &gatewayPair{w: w}
	t.Cleanup(p.teardown)
	if err := p.makeNamespaces(); err != nil {
		t.Fatalf("namespaces: %v", err)
	}
	for _, g := range []*gateway{p.a, p.b} {
		if err := os.WriteFile(g.config, []byte(pairConfig(w)), 0o644); err != nil {
			t.Fatal(err)
		}
		if r := g.snigate("check", "-c", g.config); r.err != nil {
			t.Fatalf("snigate check rejects the configuration:\n%s", r)
		}
		if err := g.start(); err != nil {
			t.Fatalf("start %s: %v", g.log, err)
		}
	}
	return p
}

func (p *gatewayPair) makeNamespaces() error {
	for _, role := range []string{"node2", "gw-a", "gw-b"} {
		ns, err := newNetns(role)
		if ns != nil {
			p.nsList = append(p.nsList, ns)
		}
		if err != nil {
			return err
		}
	}
	p.node = p.nsList[0]
	a, b, reg := p.nsList[1], p.nsList[2], p.w.registry
	links := []struct {
		x     *netns
		xDev  string
		xAddr string
		y     *netns
		yDev  string
		yAddr string
	}{
		{p.node, "to-gw-a", "10.77.3.2/24", a, "to-node", gwAAddr + "/24"},
		{p.node, "to-gw-b", "10.77.4.2/24", b, "to-node", gwBAddr + "/24"},
		{a, "to-registry", "10.77.5.1/24", reg, "to-gw-a", "10.77.5.2/24"},
		{b, "to-registry", "10.77.6.1/24", reg, "to-gw-b", "10.77.6.2/24"},
		{a, "to-gw-b", "10.77.7.1/24", b, "to-gw-a", "10.77.7.2/24"},
	}
	for _, l := range links {
		if err := vethPair(l.x, l.xDev, []string{l.xAddr}, l.y, l.yDev, []string{l.yAddr}); err != nil {
			return err
		}
	}
	err := errors.Join(
		a.ip("route", "add", "10.77.2.0/24", "via", "10.77.5.2"),
		b.ip("route", "add", "10.77.2.0/24", "via", "10.77.6.2"),
		a.ip("route", "add", gwBAddr+"/32", "via", "10.77.7.2"),
		b.ip("route", "add", gwAAddr+"/32", "via", "10.77.7.1"),
		p.node.writeEtc("resolv.conf", fmt.Sprintf("nameserver %s\nnameserver %s\noptions timeout:1 attempts:2\n", gwAAddr, gwBAddr)),
	)
	if err != nil {
		return err
	}
	p.a = p.newGateway(a, "gw-a")
	p.b = p.newGateway(b, "gw-b")
	return nil
}

func (p *gatewayPair) newGateway(ns *netns, name string) *gateway {
	return &gateway{bin: p.w.gw.bin, ns: ns, config: filepath.Join(p.w.dir, name+".yaml"),
		log: filepath.Join(p.w.logs, "snigate-"+name+".log")}
}

// teardown stops what still runs and removes the namespaces.
func (p *gatewayPair) teardown() {
	for _, g := range []*gateway{p.a, p.b} {
		if g != nil && g.proc != nil {
			g.proc.stop() //nolint:errcheck // the test checks the exits it cares about
		}
	}
	for _, ns := range p.nsList {
		if err := ns.remove(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		}
	}
}

// pairConfig is the configuration of both gateways: the registry route of
// the shared world, every gateway in dns.answer, checked.
func pairConfig(w *world) string {
	serveCA := filepath.Join(w.dir, "gateway-ca")
	return fmt.Sprintf(`listen:
  tls: [":443"]
  dns: ":53"
  admin: %q
timeouts:
  drain: 30s
dns:
  answer: [%q, %q]
  ttl: %s
  answer_check:
    port: 443
    interval: %s
    timeout: 500ms
    fall: %d
    rise: 1
routes:
  - name: registry
    sni: [%q]
    mode: bridge
    upstreams: [%q, %q]
    health:
      check: http
      interval: 1s
      timeout: 900ms
    serve:
      ca_cert: %s
      ca_key: %s
    upstream_tls:
      cert: %s
      key: %s
      ca: %s
`, adminAddr, gwAAddr, gwBAddr, answerTTL, answerInterval, answerFall, registryHost, registryAAddr, registryBAddr,
		filepath.Join(serveCA, "ca.crt"), filepath.Join(serveCA, "ca.key"),
		w.edge.certFile, w.edge.keyFile, w.registryCA.file)
}

// answers asks the responder at server (ip) for registryHost's A records
// from node2, sorted.
func (p *gatewayPair) answers(server string) ([]string, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(registryHost), dns.TypeA)
	c := &dns.Client{Timeout: time.Second}
	var resp *dns.Msg
	err := p.node.do(func() (err error) {
		resp, _, err = c.Exchange(m, server+":53")
		return err
	})
	if err != nil {
		return nil, err
	}
	var got []string
	for _, rr := range resp.Answer {
		if a, ok := rr.(*dns.A); ok {
			got = append(got, a.A.String())
		}
	}
	slices.Sort(got)
	return got, nil
}

// waitAnswers polls server until it answers want, failing t after within
// since since; it returns how long after since that was.
func (p *gatewayPair) waitAnswers(t *testing.T, server string, want []string, since time.Time, within time.Duration) time.Duration {
	t.Helper()
	var got []string
	var err error
	for {
		got, err = p.answers(server)
		if err == nil && slices.Equal(got, want) {
			return time.Since(since)
		}
		if time.Since(since) > within {
			t.Fatalf("the responder of %s answers %v (err %v) %s after, want %v within %s\n%s",
				server, got, err, time.Since(since).Round(time.Millisecond), want, within, p.logTails())
		}
		time.Sleep(pollStep) // polling DNS, the observable state; nothing to wait on
	}
}

func (p *gatewayPair) logTails() string {
	var b strings.Builder
	for _, g := range []*gateway{p.a, p.b} {
		fmt.Fprintf(&b, "--- %s\n%s\n", g.log, clip(tailFile(g.log, 25), 300))
	}
	return b.String()
}

// pushBigImage pushes an image with one layer of bigLayerBytes to registry
// A and returns the layer's digest: a download that lasts.
func (w *world) pushBigImage(t *testing.T) string {
	t.Helper()
	layer, err := random.Layer(bigLayerBytes, types.OCIUncompressedLayer)
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(w.dir, "big-image")
	lp, err := layout.Write(dir, empty.Index)
	if err == nil {
		err = lp.AppendImage(img, layout.WithAnnotations(map[string]string{refNameAnnotation: imageTag}))
	}
	if err != nil {
		t.Fatal(err)
	}
	edgeCerts := filepath.Join(w.dir, "certs-edge")
	r := runCmd(w.registry.command("skopeo", "--insecure-policy", "copy", "--dest-cert-dir", edgeCerts,
		"oci:"+dir+":"+imageTag, "docker://"+hostOf(registryAAddr)+"/"+bigRepo+":"+imageTag))
	if r.err != nil {
		t.Fatalf("push the big image: %s", r)
	}
	d, err := layer.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}
