package demo

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/snigate/snigate/internal/testkit"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// connLine matches the gateway's log line for one connection of the pull.
var connLine = regexp.MustCompile(`gateway \| time=\S+ level=INFO msg=connection listener=127\.0\.0\.1:\d+ client=127\.0\.0\.1:\d+ ` +
	`sni=registry\.example\.test route=registry mode=bridge upstream=127\.0\.0\.1:\d+ result=ok bytes_up=\d+ bytes_down=\d+ duration=\S+`)

// TestDemo runs the whole tour, as `snigate demo` does, and checks that
// every step is printed and succeeded. Regression: the digests were cut
// short (sha256:ef56b4ee0417…), which cannot be compared with skopeo
// inspect, and the gateway's log was thrown away.
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := Run(ctx, Options{Out: &out}); err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, step := range []string{
		"ok   create throwaway PKI",
		"ok   start an mTLS-only registry",
		"ok   push an image to it",
		"ok   start snigate (bridge mode + DNS responder)",
		"ok   resolve registry.example.test via snigate DNS",
		"ok   pull through snigate (no proxy, no client cert)",
		"ok   pull directly without the edge cert",
		"verdict: OK",
	} {
		if !strings.Contains(text, step) {
			t.Errorf("output lacks %q:\n%s", step, text)
		}
	}
	if strings.Contains(text, "FAIL") {
		t.Errorf("a step failed:\n%s", text)
	}
	wantFullDigests(t, text)
	wantPullConnLines(t, text)
}

// wantFullDigests checks that push and pull print the same whole digest.
func wantFullDigests(t *testing.T, text string) {
	t.Helper()
	if strings.Contains(text, "…") {
		t.Errorf("output shortens something with …:\n%s", text)
	}
	digest := regexp.MustCompile(`sha256:[0-9a-f]{64}`)
	push := digest.FindString(lineWith(text, "ok   push an image to it"))
	pull := digest.FindString(lineWith(text, "ok   pull through snigate"))
	if push == "" || push != pull {
		t.Errorf("push prints digest %q, the verified pull %q: want the same full sha256 digest in both:\n%s", push, pull, text)
	}
}

// wantPullConnLines checks that the pull step is followed by the
// gateway's connection lines, and no other step is.
func wantPullConnLines(t *testing.T, text string) {
	t.Helper()
	_, after, _ := strings.Cut(text, "ok   pull through snigate")
	after, _, _ = strings.Cut(after, "ok   pull directly")
	lines := strings.Split(strings.TrimSpace(after), "\n")[1:] // the step's own line first
	if len(lines) == 0 {
		t.Fatalf("no gateway log line after the pull step:\n%s", text)
	}
	for _, l := range lines {
		if !connLine.MatchString(l) {
			t.Errorf("line after the pull step %q: want the gateway's connection line", l)
		}
	}
	if n := strings.Count(text, "msg=connection"); n != len(lines) {
		t.Errorf("%d connection lines in the tour, %d after the pull step: want them all there", n, len(lines))
	}
}

func lineWith(text, sub string) string {
	for l := range strings.Lines(text) {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// TestDemoKeepShowsConnectionsLive runs `snigate demo --keep`, fetches
// /v2/_catalog as the printed curl command does, and expects the gateway's
// line for that connection on the output as it happens.
func TestDemoKeepShowsConnectionsLive(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := testkit.NewLogSink() // the demo's output, written by the gateway's log too
	done := make(chan error, 1)
	go func() { done <- Run(ctx, Options{Keep: true, Out: out}) }()
	tourText := out.WaitForContext(ctx, t, func(s string) bool { return strings.Contains(s, "follow as they happen") }, neverShown)
	m := regexp.MustCompile(`curl --cacert (\S+) --resolve registry\.example\.test:(\d+):127\.0\.0\.1`).FindStringSubmatch(tourText)
	if m == nil {
		t.Fatalf("no curl command in the --keep output:\n%s", tourText)
	}
	if before := strings.Count(tourText, "msg=connection"); before != 1 {
		t.Errorf("%d connection lines in the tour, want the pull's one", before)
	}
	getCatalog(t, m[1], m[2])
	live := regexp.MustCompile(`\n  ` + connLine.String()) // indented less than the tour's
	out.WaitForContext(ctx, t, func(s string) bool {
		_, after, _ := strings.Cut(s, "follow as they happen")
		return live.MatchString(after)
	}, neverShown)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
}

// neverShown is the failure when the demo's output ends its wait short.
func neverShown(text string) string {
	return "the demo's output never showed what the test waits for:\n" + text
}

// getCatalog does what the printed curl command does.
func getCatalog(t *testing.T, caFile, port string) {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	tr := &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return new(net.Dialer).DialContext(ctx, network, "127.0.0.1:"+port)
		},
	}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("https://registry.example.test:" + port + "/v2/_catalog")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "demo/hello") {
		t.Fatalf("GET /v2/_catalog through the gateway: %d %s", resp.StatusCode, body)
	}
}
