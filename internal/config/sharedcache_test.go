package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func sharedDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	testPKI(t, dir)
	for name, v := range map[string]string{"ak": "AKIA\n", "sk": "secret\n", "empty": "  \n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestSharedCacheSection(t *testing.T) {
	dir := sharedDir(t)
	y := minimalBridge + `    http:
      cache:
        dir: c
        shared: {endpoint: "https://s3.internal:8333", bucket: snigate-cache, prefix: registry/, region: eu-west-1,
          access_key_file: ak, secret_key_file: sk, ca: ca.crt}
`
	cfg, err := Parse(filepath.Join(dir, "snigate.yaml"), []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	want := &SharedCache{Endpoint: "https://s3.internal:8333", Bucket: "snigate-cache", Prefix: "registry/", Region: "eu-west-1",
		AccessKeyFile: filepath.Join(dir, "ak"), SecretKeyFile: filepath.Join(dir, "sk"), CA: filepath.Join(dir, "ca.crt")}
	if got := cfg.Routes[0].HTTP.Cache.Shared; !reflect.DeepEqual(got, want) {
		t.Errorf("Shared = %+v, want %+v", got, want)
	}
}

func TestSharedCacheErrors(t *testing.T) {
	dir := sharedDir(t)
	base := minimalBridge + "    http: {cache: {dir: c, shared: {%s}}}\n"
	ok := "access_key_file: ak, secret_key_file: sk"
	tests := []struct {
		name, shared string
		want         []string
	}{
		{name: "required keys", shared: "prefix: a/", want: []string{
			`snigate.yaml:10: routes[0].http.cache.shared.endpoint: required: the S3 API's URL, such as "https://s3.internal:8333"`,
			`snigate.yaml:10: routes[0].http.cache.shared.bucket: required: the bucket's name, such as "snigate-cache"`,
			`snigate.yaml:10: routes[0].http.cache.shared.access_key_file: required: a file holding the access key, such as /etc/snigate/s3/access_key`,
			`snigate.yaml:10: routes[0].http.cache.shared.secret_key_file: required: a file holding the secret key, such as /etc/snigate/s3/secret_key`,
		}},
		{name: "endpoint with a path", shared: "endpoint: \"https://s3/bucket\", bucket: abc, " + ok, want: []string{
			`snigate.yaml:10: routes[0].http.cache.shared.endpoint: want a URL such as "https://s3.internal:8333" (no path, query, fragment or user), got "https://s3/bucket"`,
		}},
		{name: "endpoint scheme", shared: "endpoint: \"s3.internal:8333\", bucket: abc, " + ok, want: []string{
			`snigate.yaml:10: routes[0].http.cache.shared.endpoint: want a URL such as "https://s3.internal:8333" (http:// or https://), got "s3.internal:8333"`,
		}},
		{name: "bucket name", shared: "endpoint: \"http://s3\", bucket: Snigate_Cache, " + ok, want: []string{
			`snigate.yaml:10: routes[0].http.cache.shared.bucket: a bucket name has only lower-case letters, digits, dots and hyphens, got "Snigate_Cache"`,
		}},
		{name: "prefix", shared: "endpoint: \"http://s3\", bucket: abc, prefix: /reg, " + ok, want: []string{
			`snigate.yaml:10: routes[0].http.cache.shared.prefix: want a key prefix that ends with "/", such as "registry/" (no leading "/", no "//"), got "/reg"`,
		}},
		{name: "key files", shared: "endpoint: \"http://s3\", bucket: abc, access_key_file: missing, secret_key_file: empty", want: []string{
			`snigate.yaml:10: routes[0].http.cache.shared.access_key_file: cannot read missing: no such file or directory`,
			`snigate.yaml:10: routes[0].http.cache.shared.secret_key_file: empty is empty: write the key in it`,
		}},
		{name: "ca", shared: "endpoint: \"http://s3\", bucket: abc, ca: ak, " + ok, want: []string{
			`snigate.yaml:10: routes[0].http.cache.shared.ca: no PEM certificate in ak`,
		}},
		{name: "unknown key", shared: "endpoint: \"http://s3\", bucket: abc, url: x, " + ok, want: []string{
			`snigate.yaml:10: routes[0].http.cache.shared.url: unknown key; allowed here: endpoint, bucket, prefix, region, access_key_file, secret_key_file, ca`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := parseInDir(t, dir, strings.Replace(base, "%s", tc.shared, 1))
			for i := range got {
				got[i] = strings.ReplaceAll(got[i], dir+"/", "")
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
