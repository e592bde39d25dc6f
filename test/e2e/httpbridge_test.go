package e2e

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The HTTP-aware bridge (route "pull", httpHost): the same registries as
// the byte bridge, but the gateway speaks their HTTP: the registry sees the
// node's address, pushes and repositories outside the allow-list are
// refused before they reach it, and every request is in the audit log.

// TestHTTPBridgePullsWithSkopeo: a pull through the HTTP route ends with
// the pushed digest, the registry logs the node's address (distribution
// takes X-Forwarded-For as the remote address) and the audit log has the
// manifest request with the node's address, repository and digest.
func TestHTTPBridgePullsWithSkopeo(t *testing.T) {
	w := getWorld(t)
	w.mustPullSkopeo(t, httpHost, w.gatewayCerts)
	uri := "/v2/" + imageRepo + "/manifests/" + imageTag
	line := w.waitRegistryLog(t, uri)
	if !strings.Contains(line, "remoteaddr="+nodeAddr) && !strings.Contains(line, `remoteaddr="`+nodeAddr) {
		t.Errorf("the registry logged the pull of %s without the node's address %s:\n%s", uri, nodeAddr, line)
	}
	// The routes share one audit file: the record of this route's pull
	// (other tests pull the same tag through the cache route).
	rec := w.waitAudit(t, func(r auditRecord) bool {
		return r.Route == "pull" && r.Kind == "manifest" && r.Reference == imageTag && r.Status == http.StatusOK && r.Method == http.MethodGet
	})
	if !strings.HasPrefix(rec.Client, nodeAddr+":") || rec.Repository != imageRepo || rec.Route != "pull" ||
		rec.Digest != w.image.digest.String() || rec.Upstream == "" || rec.Bytes <= 0 {
		t.Errorf("audit record of the manifest pull: %+v; want client %s:*, repository %s, route pull, digest %s, an upstream, bytes",
			rec, nodeAddr, imageRepo, w.image.digest)
	}
}

// TestHTTPBridgePullsWithContainerd: ctr (hosts.toml trusting the gateway
// CA) and a CRI pull (crictl against containerd's CRI service) through the
// HTTP route.
func TestHTTPBridgePullsWithContainerd(t *testing.T) {
	w := getWorld(t)
	ref := imageRef(httpHost)
	runCmd(w.ctrd.ctr(w.node, "images", "rm", "--sync", ref))
	if r := runCmd(w.ctrd.ctr(w.node, "images", "pull", "--hosts-dir", w.ctrd.hostsDir, ref)); r.err != nil {
		t.Fatalf("ctr pull failed:\n%s", r)
	}
	if got, err := w.ctrd.imageDigest(w.node, ref); err != nil || got != w.image.digest.String() {
		t.Fatalf("ctr pulled %s (%v), pushed %s", got, err, w.image.digest)
	}
	runCmd(w.ctrd.ctr(w.node, "images", "rm", "--sync", ref))
	crictl := func(args ...string) result {
		return runCmd(w.node.command(append([]string{"crictl", "--runtime-endpoint", "unix://" + w.ctrd.socket,
			"--image-endpoint", "unix://" + w.ctrd.socket, "--timeout", "60s"}, args...)...))
	}
	if r := crictl("pull", ref); r.err != nil {
		t.Fatalf("CRI pull failed:\n%s", r)
	}
	r := crictl("inspecti", "-o", "json", ref)
	if r.err != nil || !strings.Contains(r.out, w.image.digest.String()) {
		t.Fatalf("the CRI image store has no %s with digest %s:\n%s", ref, w.image.digest, r)
	}
}

// TestHTTPBridgeDropsSpoofedForwarded: what the node sends in
// X-Forwarded-For, X-Real-IP and Forwarded does not reach the registry;
// the node's own address does.
func TestHTTPBridgeDropsSpoofedForwarded(t *testing.T) {
	w := getWorld(t)
	const spoofed = "203.0.113.9"
	uri := fmt.Sprintf("/v2/%s/manifests/spoof-%d", imageRepo, time.Now().UnixNano())
	status, _, err := w.httpRouteRequest(t, http.MethodGet, httpHost, uri, map[string]string{
		"X-Forwarded-For": spoofed, "X-Real-IP": spoofed, "Forwarded": "for=" + spoofed,
	})
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusNotFound {
		t.Errorf("GET %s: %d, want the registry's 404", uri, status)
	}
	line := w.waitRegistryLog(t, uri)
	if strings.Contains(line, spoofed) || !strings.Contains(line, nodeAddr) {
		t.Errorf("the registry's log of a request with a spoofed X-Forwarded-For shows:\n%s\nwant the node's %s and not %s", line, nodeAddr, spoofed)
	}
}

// TestHTTPBridgeRefusals: Host other than the SNI (421), a method outside
// http.methods (405), a repository outside http.repositories (403), each
// with an OCI error body DENIED, none reaching the registry, each audited.
func TestHTTPBridgeRefusals(t *testing.T) {
	w := getWorld(t)
	tests := []struct {
		name, method, host, path string
		status                   int
	}{
		{name: "host is not the SNI", method: http.MethodGet, host: registryHost, path: "/v2/" + imageRepo + "/manifests/misdirected", status: http.StatusMisdirectedRequest},
		{name: "method", method: http.MethodDelete, host: httpHost, path: "/v2/" + imageRepo + "/manifests/sha256:" + strings.Repeat("0", 64), status: http.StatusMethodNotAllowed},
		{name: "repository", method: http.MethodGet, host: httpHost, path: "/v2/other/app/manifests/refused", status: http.StatusForbidden},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body, err := w.httpRouteRequest(t, tc.method, tc.host, tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if status != tc.status || !strings.Contains(string(body), `"code":"DENIED"`) {
				t.Errorf("%s %s (Host %s): %d %s; want %d with an OCI error DENIED", tc.method, tc.path, tc.host, status, body, tc.status)
			}
			if tc.status != http.StatusMisdirectedRequest {
				w.waitAudit(t, func(r auditRecord) bool { return r.Status == tc.status && r.Method == tc.method })
			}
		})
	}
	for _, r := range []*registry{w.regA, w.regB} {
		if b, _ := os.ReadFile(r.proc.logPath); strings.Contains(string(b), "/v2/other/app") || strings.Contains(string(b), "manifests/misdirected") {
			t.Errorf("a refused request reached %s", r.name)
		}
	}
}

// TestHTTPBridgeRefusesPush: skopeo copy to the registry through the HTTP
// route fails with DENIED (the default methods are GET and HEAD) and the
// registry has nothing new.
func TestHTTPBridgeRefusesPush(t *testing.T) {
	w := getWorld(t)
	repo := fmt.Sprintf("e2e/pushed-%d", time.Now().UnixNano())
	r := runCmd(skopeo(w.node, "copy", "--dest-cert-dir", w.gatewayCerts,
		"oci:"+w.image.layout+":"+imageTag, "docker://"+httpHost+"/"+repo+":1"))
	if r.err == nil {
		t.Fatalf("a push through the read-only HTTP route succeeded:\n%s", r)
	}
	if !strings.Contains(strings.ToLower(r.out), "denied") {
		t.Errorf("the push failed without saying it was denied:\n%s", r)
	}
	status, err := w.registryGet(t, "/v2/"+repo+"/tags/list")
	if err != nil || status != http.StatusNotFound {
		t.Errorf("GET /v2/%s/tags/list on the registry: %d (%v), want 404: the refused push left something", repo, status, err)
	}
}

// httpRouteRequest sends one request from the node to the gateway with
// SNI httpHost and the given Host header.
func (w *world) httpRouteRequest(t *testing.T, method, host, path string, header map[string]string) (int, []byte, error) {
	t.Helper()
	conn, err := tlsDialIn(w.node, bastionAddr+":443", w.gatewayTLS(t, httpHost))
	if err != nil {
		return 0, nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	req, err := http.NewRequest(method, "https://"+host+path, nil)
	if err != nil {
		return 0, nil, err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	req.Close = true
	if err := req.Write(conn); err != nil {
		return 0, nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// registryGet GETs path from registry A directly, from the bastion, with
// the edge certificate.
func (w *world) registryGet(t *testing.T, path string) (int, error) {
	t.Helper()
	pool, err := certPool(w.registryCA.file)
	if err != nil {
		return 0, err
	}
	cert, err := tls.LoadX509KeyPair(w.edge.certFile, w.edge.keyFile)
	if err != nil {
		return 0, err
	}
	conn, err := tlsDialIn(w.bastion, registryAAddr, &tls.Config{ServerName: registryHost, RootCAs: pool,
		Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}})
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	status, _, err := roundTrip(conn, "https://"+registryHost+path)
	return status, err
}

// remoteAddrField is the remote address in distribution's log lines.
var remoteAddrField = regexp.MustCompile(`http\.request\.remoteaddr="?([^" ]+)`)

// waitRegistryLog returns the line where registry A or B logged the
// response to uri, waiting for it (the log is written after the response).
func (w *world) waitRegistryLog(t *testing.T, uri string) string {
	t.Helper()
	var found string
	err := poll(startTries, pollStep, func() error {
		for _, r := range []*registry{w.regA, w.regB} {
			b, err := os.ReadFile(r.proc.logPath)
			if err != nil {
				return err
			}
			for _, line := range strings.Split(string(b), "\n") {
				if (strings.Contains(line, "uri="+uri+" ") || strings.Contains(line, `uri="`+uri+`"`)) &&
					strings.Contains(line, "http.request.host="+httpHost) && remoteAddrField.MatchString(line) {
					found = line
					return nil
				}
			}
		}
		return fmt.Errorf("no registry logged a request for %s", uri)
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// auditRecord is one line of http.audit_log (the contract).
type auditRecord struct {
	Time       string  `json:"time"`
	Route      string  `json:"route"`
	Client     string  `json:"client"`
	Node       string  `json:"node"`
	Method     string  `json:"method"`
	Repository string  `json:"repository"`
	Kind       string  `json:"kind"`
	Reference  string  `json:"reference"`
	Digest     string  `json:"digest"`
	Status     int     `json:"status"`
	Bytes      int64   `json:"bytes"`
	DurationMS float64 `json:"duration_ms"`
	Cache      string  `json:"cache"`
	Upstream   string  `json:"upstream"`
	Error      string  `json:"error"`
	Auth       string  `json:"auth"`
}

// waitAudit waits until the audit log has a record match accepts (it is
// written off the request path) and returns it. Every line must parse.
func (w *world) waitAudit(t *testing.T, match func(auditRecord) bool) auditRecord {
	t.Helper()
	return waitAuditFile(t, filepath.Join(w.dir, "audit.log"), match)
}

// waitAuditFile is waitAudit on the audit log file.
func waitAuditFile(t *testing.T, file string, match func(auditRecord) bool) auditRecord {
	t.Helper()
	return waitRecord(t, file, match)
}

// waitRecord waits until the JSON-lines log file has a record that match
// accepts (R: the fields a test reads) and returns it. Every complete
// line must parse; a line being written is not read.
func waitRecord[R any](t *testing.T, file string, match func(R) bool) R {
	t.Helper()
	var found R
	err := poll(startTries, pollStep, func() error {
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		complete := string(b[:strings.LastIndexByte(string(b), '\n')+1])
		for _, line := range strings.Split(strings.TrimSpace(complete), "\n") {
			if line == "" {
				continue
			}
			var r R
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				return fmt.Errorf("%w: audit line %q: %v", errGaveUp, line, err)
			}
			if match(r) {
				found = r
				return nil
			}
		}
		return fmt.Errorf("no matching record in %s", file)
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
