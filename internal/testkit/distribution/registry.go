package distribution

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/snigate/snigate/internal/testkit"
)

// StartLimit bounds a docker-registry start on a busy machine; a failure
// bound, never a synchronisation.
const StartLimit = 30 * time.Second

// TLSFiles is the registry's server certificate and key (PEM) and, when
// ClientCAs is set, the CAs whose client certificates it demands.
type TLSFiles struct {
	Cert, Key []byte
	ClientCAs []byte
}

// Options configures Start. Htpasswd and Token are exclusive; neither:
// no auth section.
type Options struct {
	TLS           TLSFiles
	Secret        string            // http.secret; "distribution-test" if empty
	Delete        bool              // storage.delete.enabled
	Htpasswd      map[string]string // username -> password, bcrypt in an htpasswd file
	HtpasswdRealm string            // the htpasswd realm; "test-basic" if empty
	Token         *TokenService     // auth: token, trusting this service
}

// Registry is a running docker-registry process.
type Registry struct {
	Addr string           // 127.0.0.1:port
	Logs *testkit.LogSink // everything it wrote to stdout and stderr
	stop func()
}

// Stop ends the process and waits for it; Start's cleanup calls it too.
func (r *Registry) Stop() { r.stop() }

// Start runs docker-registry over TLS on 127.0.0.1:0 with o's
// configuration and waits for its "listening on" line; the test is
// skipped where it is not installed.
func Start(tb testing.TB, o Options) *Registry {
	tb.Helper()
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		tb.Skip("docker-registry is not installed (test/deps.sh installs it)")
	}
	path := writeConfig(tb, tb.TempDir(), o)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "serve", path)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		cancel()
		tb.Fatal(err)
	}
	var once sync.Once
	r := &Registry{Logs: testkit.NewLogSink(), stop: func() {
		once.Do(func() { cancel(); _ = cmd.Wait(); _ = pw.Close() })
	}}
	tb.Cleanup(r.Stop)
	addr := make(chan string, 1)
	go scanListening(pr, r.Logs, addr)
	select {
	case r.Addr = <-addr:
	case <-time.After(StartLimit):
		tb.Fatal("docker-registry did not log its listening address")
	}
	return r
}

// writeConfig writes the certificate files, the htpasswd file and
// config.yml (listening on 127.0.0.1:0) to dir and returns the config's
// path.
func writeConfig(tb testing.TB, dir string, o Options) string {
	tb.Helper()
	writeFile(tb, filepath.Join(dir, "registry.crt"), o.TLS.Cert)
	writeFile(tb, filepath.Join(dir, "registry.key"), o.TLS.Key)
	storage, tls := "{filesystem: {rootdirectory: "+dir+"/data}}", "{certificate: "+dir+"/registry.crt, key: "+dir+"/registry.key}"
	if o.Delete {
		storage = "{filesystem: {rootdirectory: " + dir + "/data}, delete: {enabled: true}}"
	}
	if len(o.TLS.ClientCAs) > 0 {
		writeFile(tb, filepath.Join(dir, "ca.crt"), o.TLS.ClientCAs)
		tls = "{certificate: " + dir + "/registry.crt, key: " + dir + "/registry.key, clientcas: [" + dir + "/ca.crt]}"
	}
	secret := o.Secret
	if secret == "" {
		secret = "distribution-test"
	}
	cfg := fmt.Sprintf("version: 0.1\nlog: {level: info, formatter: text}\nstorage: %s\nhttp:\n  addr: 127.0.0.1:0\n  secret: %s\n  tls: %s\n",
		storage, secret, tls)
	switch {
	case o.Token != nil:
		cfg += "auth:\n" + o.Token.AuthYAML() + "\n"
	case o.Htpasswd != nil:
		realm := o.HtpasswdRealm
		if realm == "" {
			realm = "test-basic"
		}
		file := filepath.Join(dir, "htpasswd")
		WriteHtpasswd(tb, file, o.Htpasswd)
		cfg += "auth:\n  htpasswd:\n    realm: " + realm + "\n    path: " + file + "\n"
	}
	path := filepath.Join(dir, "config.yml")
	writeFile(tb, path, []byte(cfg))
	return path
}

// scanListening copies docker-registry's output to logs and sends the
// address of its "listening on" line.
func scanListening(r io.Reader, logs io.Writer, addr chan<- string) {
	sc := bufio.NewScanner(r)
	sent := false
	for sc.Scan() {
		line := sc.Text()
		_, _ = io.WriteString(logs, line+"\n")
		if _, rest, ok := strings.Cut(line, `msg="listening on `); ok && !sent {
			a, _, _ := strings.Cut(rest, `"`)
			a, _, _ = strings.Cut(a, ", tls")
			addr <- a
			sent = true
		}
	}
	_, _ = io.Copy(logs, r) // past a line too long for the scanner: keep the process unblocked
}

// WriteHtpasswd writes an htpasswd file of users (bcrypt) to path.
func WriteHtpasswd(tb testing.TB, path string, users map[string]string) {
	tb.Helper()
	var b strings.Builder
	for u, pw := range users {
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		if err != nil {
			tb.Fatal(err)
		}
		fmt.Fprintf(&b, "%s:%s\n", u, h)
	}
	writeFile(tb, path, []byte(b.String()))
}

func writeFile(tb testing.TB, path string, b []byte) {
	tb.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		tb.Fatal(err)
	}
}
