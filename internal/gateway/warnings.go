package gateway

import (
	"fmt"
	"os"

	"github.com/snigate/snigate/internal/config"
)

// KeyFileWarnings names the private key files that group or others can
// read, with the chmod that fixes each.
func KeyFileWarnings(cfg *config.Config) []string {
	seen := map[string]bool{}
	var out []string
	check := func(key, path string) {
		if path == "" || seen[path] {
			return
		}
		seen[path] = true
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm()&0o077 == 0 {
			return
		}
		out = append(out, fmt.Sprintf("%s: private key file %s has mode %04o, readable by group or others; fix with: chmod 600 %s",
			key, path, fi.Mode().Perm(), path))
	}
	for i, r := range cfg.Routes {
		check(fmt.Sprintf("routes[%d].serve.key", i), r.Serve.Key)
		check(fmt.Sprintf("routes[%d].serve.ca_key", i), r.Serve.CAKey)
		check(fmt.Sprintf("routes[%d].upstream_tls.key", i), r.UpstreamTLS.Key)
	}
	return out
}
