package s3tier

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/snigate/snigate/names"
)

// Defaults of the Config fields whose zero value means "the default".
const (
	// DefaultCallTimeout bounds every S3 call but the transfer of a body:
	// a HEAD, a PUT of a lease, a DELETE, the start of a GET.
	DefaultCallTimeout = 10 * time.Second
	// DefaultLeaseTTL: a lease whose object has not changed for this long,
	// by the waiter's own clock, belongs to a dead gateway and is taken
	// over. Its owner rewrites it every third of it.
	DefaultLeaseTTL = 30 * time.Second
	// DefaultWaitTimeout: a gateway waiting on another's lease goes to the
	// registry itself after this long.
	DefaultWaitTimeout = 5 * time.Minute
	// DefaultUploadStall: an upload that cannot take the next bytes of a
	// fill for this long is abandoned (the fill goes on, not slowed).
	DefaultUploadStall = 10 * time.Second
	// DefaultPartSize is the multipart part size of an upload (S3's
	// minimum is 5 MiB): content up to it is one PUT.
	DefaultPartSize = 8 << 20
)

// Config is one route's shared tier (routes[].http.cache.shared).
type Config struct {
	Route         string // labels and log keys
	Endpoint      string // http:// or https:// URL of the S3 API; required
	Bucket        string // required
	Prefix        string // key prefix, such as "registry/"; "" none
	Region        string // "": the client's default
	AccessKeyFile string // required; re-read when it changes
	SecretKeyFile string // required; re-read when it changes
	CA            string // PEM file of the endpoint's CAs; "": system roots
	// Owner names this gateway in its leases (log lines of the others);
	// "": the host name.
	Owner string

	CallTimeout time.Duration // 0: DefaultCallTimeout
	LeaseTTL    time.Duration // 0: DefaultLeaseTTL
	WaitTimeout time.Duration // 0: DefaultWaitTimeout
	UploadStall time.Duration // 0: DefaultUploadStall
	PartSize    uint64        // 0: DefaultPartSize

	Logger  *slog.Logger // nil: slog.Default()
	Metrics *Metrics     // nil: nothing recorded
}

func (c *Config) defaults() {
	if c.CallTimeout <= 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.WaitTimeout <= 0 {
		c.WaitTimeout = DefaultWaitTimeout
	}
	if c.UploadStall <= 0 {
		c.UploadStall = DefaultUploadStall
	}
	if c.PartSize == 0 {
		c.PartSize = DefaultPartSize
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Owner == "" {
		c.Owner, _ = os.Hostname()
	}
}

// endpoint parses Endpoint into minio's host and secure flag.
func (c *Config) endpoint() (host string, secure bool, err error) {
	u, err := url.Parse(c.Endpoint)
	switch {
	case err != nil:
		return "", false, fmt.Errorf("endpoint %q: %w", c.Endpoint, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", false, fmt.Errorf("endpoint %q: want an http:// or https:// URL", c.Endpoint)
	case u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil:
		return "", false, fmt.Errorf("endpoint %q: want scheme://host[:port] with no path, query or user", c.Endpoint)
	}
	return u.Host, u.Scheme == "https", nil
}

// transport is the client's own: the endpoint's CAs, dial and header
// deadlines.
func (c *Config) transport() (*http.Transport, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CA != "" {
		pem, err := os.ReadFile(c.CA)
		if err != nil {
			return nil, fmt.Errorf("read ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca %s: no PEM certificate in it", c.CA)
		}
		tc.RootCAs = pool
	}
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		TLSClientConfig:       tc,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: c.CallTimeout,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   16,
		ForceAttemptHTTP2:     true,
	}, nil
}

// ErrConfig is wrapped by New's errors about the Config itself.
var ErrConfig = errors.New("s3tier: config")

func (c *Config) validate() error {
	var msgs []string
	if _, _, err := c.endpoint(); err != nil {
		msgs = append(msgs, err.Error())
	}
	if err := names.CheckBucket(c.Bucket); err != nil {
		msgs = append(msgs, fmt.Sprintf("bucket %q: %v", c.Bucket, err))
	}
	if c.AccessKeyFile == "" || c.SecretKeyFile == "" {
		msgs = append(msgs, "access_key_file and secret_key_file are required")
	}
	if len(msgs) > 0 {
		return fmt.Errorf("%w: %s", ErrConfig, strings.Join(msgs, "; "))
	}
	return nil
}
