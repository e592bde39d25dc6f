package s3tier

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// keyFiles writes an access and a secret key file in dir.
func keyFiles(t *testing.T, ak, sk string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	a, s := filepath.Join(dir, "ak"), filepath.Join(dir, "sk")
	for f, v := range map[string]string{a: ak, s: sk} {
		if err := os.WriteFile(f, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return a, s
}

// TestMetricsContract: the series of the contract exist, named exactly,
// from New (counters at 0), and DeleteRoute drops them.
func TestMetricsContract(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	ak, sk := keyFiles(t, "a", "s")
	tier, err := New(Config{Route: "registry", Endpoint: "http://127.0.0.1:1", Bucket: "snigate-cache",
		AccessKeyFile: ak, SecretKeyFile: sk, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	defer tier.Close()
	tier.m.requests(resultHit)
	tier.m.bytesRead(42)
	want := `
# HELP snigate_cache_shared_bytes_total Bytes of content read from or written to the shared cache tier.
# TYPE snigate_cache_shared_bytes_total counter
snigate_cache_shared_bytes_total{direction="read",route="registry"} 42
snigate_cache_shared_bytes_total{direction="written",route="registry"} 0
# HELP snigate_cache_shared_requests_total Lookups of content in the shared cache tier, by result: hit, miss or error.
# TYPE snigate_cache_shared_requests_total counter
snigate_cache_shared_requests_total{result="error",route="registry"} 0
snigate_cache_shared_requests_total{result="hit",route="registry"} 1
snigate_cache_shared_requests_total{result="miss",route="registry"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	m.DeleteRoute("registry")
	if n, _ := testutil.GatherAndCount(reg); n != 0 {
		t.Errorf("%d series left after DeleteRoute", n)
	}
}

// TestNewRefusesBadConfig: New names what is wrong, sending nothing.
func TestNewRefusesBadConfig(t *testing.T) {
	ak, sk := keyFiles(t, "a", "s")
	_, empty := keyFiles(t, "a", "  \n")
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{name: "endpoint path", cfg: Config{Endpoint: "http://s3/b", Bucket: "abc", AccessKeyFile: ak, SecretKeyFile: sk}, want: "no path"},
		{name: "bucket", cfg: Config{Endpoint: "http://s3", Bucket: "A_B", AccessKeyFile: ak, SecretKeyFile: sk}, want: `bucket "A_B"`},
		{name: "no keys", cfg: Config{Endpoint: "http://s3", Bucket: "abc"}, want: "access_key_file and secret_key_file are required"},
		{name: "empty secret", cfg: Config{Endpoint: "http://s3", Bucket: "abc", AccessKeyFile: ak, SecretKeyFile: empty}, want: "is empty"},
		{name: "ca", cfg: Config{Endpoint: "https://s3", Bucket: "abc", AccessKeyFile: ak, SecretKeyFile: sk, CA: ak}, want: "no PEM certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tier, err := New(tt.cfg)
			if err == nil {
				tier.Close()
				t.Fatal("New accepted it")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New: %v, want it to say %q", err, tt.want)
			}
		})
	}
}

// TestKeyFilesReadAgainWhenChanged: a rotated key is used from the next
// call, without a new Tier; an unchanged file is not read again.
func TestKeyFilesReadAgainWhenChanged(t *testing.T) {
	ak, sk := keyFiles(t, "old-access\n", "old-secret\n")
	c, err := newFileCreds(ak, sk)
	if err != nil {
		t.Fatal(err)
	}
	if c.IsExpired() {
		t.Fatal("expired although neither file changed")
	}
	if err := os.WriteFile(sk+".new", []byte("new-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(sk+".new", sk); err != nil { // as a secret manager replaces it
		t.Fatal(err)
	}
	if !c.IsExpired() {
		t.Fatal("not expired after the secret file was replaced")
	}
	v, err := c.Retrieve()
	if err != nil {
		t.Fatal(err)
	}
	if v.AccessKeyID != "old-access" || v.SecretAccessKey != "new-secret" {
		t.Fatalf("keys = %q, %q; want old-access, new-secret", v.AccessKeyID, v.SecretAccessKey)
	}
}
