package config

import (
	"net/url"
	"strings"

	"github.com/snigate/snigate/names"
)

// SharedCache is routes[].http.cache.shared: an S3-compatible bucket the
// gateways of a fleet share as a second tier of the route's cache.
type SharedCache struct {
	Endpoint      string // http:// or https:// URL of the S3 API, no path
	Bucket        string // an S3 bucket name (names.CheckBucket)
	Prefix        string // key prefix; "" none, else ends with "/"
	Region        string // "": the client's default
	AccessKeyFile string // absolute; re-read on change
	SecretKeyFile string // absolute; re-read on change
	CA            string // absolute PEM bundle; "": system roots
}

// sharedCache parses cache.shared.
func (p *parser) sharedCache(c fields) *SharedCache {
	n := c.get("shared")
	if n == nil {
		return nil
	}
	f := p.mapping(n, c.key("shared"), c.keyLine("shared"), "endpoint", "bucket", "prefix", "region",
		"access_key_file", "secret_key_file", "ca")
	s := &SharedCache{
		Endpoint:      p.stringAt(f, "endpoint", `a URL such as "https://s3.internal:8333"`),
		Bucket:        p.stringAt(f, "bucket", `a bucket name such as "snigate-cache"`),
		Prefix:        p.stringAt(f, "prefix", `a key prefix such as "registry/"`),
		Region:        p.stringAt(f, "region", `a region such as "us-east-1"`),
		AccessKeyFile: p.pathAt(f, "access_key_file"),
		SecretKeyFile: p.pathAt(f, "secret_key_file"),
		CA:            p.pathAt(f, "ca"),
	}
	p.require(f, "endpoint", s.Endpoint != "", `the S3 API's URL, such as "https://s3.internal:8333"`)
	p.require(f, "bucket", s.Bucket != "", `the bucket's name, such as "snigate-cache"`)
	p.require(f, "access_key_file", s.AccessKeyFile != "", "a file holding the access key, such as /etc/snigate/s3/access_key")
	p.require(f, "secret_key_file", s.SecretKeyFile != "", "a file holding the secret key, such as /etc/snigate/s3/secret_key")
	p.checkShared(f, s)
	return s
}

// checkShared checks the values: the endpoint's form, the bucket's name,
// the prefix, and that the files can be read.
func (p *parser) checkShared(f fields, s *SharedCache) {
	if s.Endpoint != "" {
		if msg := endpointProblem(s.Endpoint); msg != "" {
			p.errorf(f.keyLine("endpoint"), f.key("endpoint"), "want a URL such as \"https://s3.internal:8333\" (%s), got %q", msg, s.Endpoint)
		}
	}
	if s.Bucket != "" {
		if err := names.CheckBucket(s.Bucket); err != nil {
			p.errorf(f.keyLine("bucket"), f.key("bucket"), "%v, got %q", err, s.Bucket)
		}
	}
	if s.Prefix != "" && (!strings.HasSuffix(s.Prefix, "/") || strings.HasPrefix(s.Prefix, "/") || strings.Contains(s.Prefix, "//")) {
		p.errorf(f.keyLine("prefix"), f.key("prefix"), "want a key prefix that ends with \"/\", such as \"registry/\" (no leading \"/\", no \"//\"), got %q", s.Prefix)
	}
	for _, k := range []struct{ name, path string }{{"access_key_file", s.AccessKeyFile}, {"secret_key_file", s.SecretKeyFile}} {
		if k.path == "" {
			continue
		}
		if data, ok := p.readFile(f, k.name, k.path); ok && strings.TrimSpace(string(data)) == "" {
			p.errorf(f.keyLine(k.name), f.key(k.name), "%s is empty: write the key in it", k.path)
		}
	}
	if s.CA != "" {
		p.checkCABundle(f, "ca", s.CA)
	}
}

// endpointProblem says what is wrong with an endpoint URL ("" nothing).
func endpointProblem(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return err.Error()
	case u.Scheme != "http" && u.Scheme != "https":
		return "http:// or https://"
	case u.Host == "":
		return "a host"
	case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return "no path, query, fragment or user"
	}
	return ""
}
