package gateway

import (
	"fmt"
	"os"
	"slices"
	"syscall"

	"github.com/snigate/snigate/internal/config"
)

// KeyFileWarnings names the private key files that other users can read,
// with the chmod that fixes each. A key readable by others is always
// reported; a group-readable one only when the group is not one of this
// process's own (a Kubernetes Secret volume mounts keys 0440 with the
// pod's fsGroup, which is exactly the process's group).
func KeyFileWarnings(cfg *config.Config) []string {
	seen := map[string]bool{}
	var out []string
	check := func(key, path string) {
		if path == "" || seen[path] {
			return
		}
		seen[path] = true
		if fi, err := os.Stat(path); err == nil && exposed(fi) {
			out = append(out, fmt.Sprintf("%s: private key file %s has mode %04o, readable by other users; fix with: chmod 600 %s",
				key, path, fi.Mode().Perm(), path))
		}
	}
	for i, r := range cfg.Routes {
		check(fmt.Sprintf("routes[%d].serve.key", i), r.Serve.Key)
		check(fmt.Sprintf("routes[%d].serve.ca_key", i), r.Serve.CAKey)
		check(fmt.Sprintf("routes[%d].upstream_tls.key", i), r.UpstreamTLS.Key)
	}
	return out
}

func exposed(fi os.FileInfo) bool {
	perm := fi.Mode().Perm()
	if perm&0o007 != 0 {
		return true
	}
	if perm&0o070 == 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	groups, _ := os.Getgroups()
	return int(st.Gid) != os.Getgid() && !slices.Contains(groups, int(st.Gid))
}
