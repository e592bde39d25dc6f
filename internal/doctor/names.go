package doctor

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// Docker Hub's names: references name docker.io (or nothing), the
// registry is registry-1.docker.io, and a one-component repository is
// under library/.
const (
	dockerHubRegistry = "registry-1.docker.io"
	dockerHubLibrary  = "library/"
)

// dockerHubAliases are the names docker.io images are referred to by.
var dockerHubAliases = map[string]bool{"docker.io": true, "index.docker.io": true}

// dockerHub rewrites a target named as docker.io references are into the
// registry a pull reaches: registry-1.docker.io, library/ for a
// repository of one component.
func dockerHub(t target) target {
	if !dockerHubAliases[t.host] || t.port != DefaultPort {
		return t
	}
	t.host = dockerHubRegistry
	if t.repo != "" && !strings.Contains(t.repo, "/") {
		t.repo = dockerHubLibrary + t.repo
	}
	return t
}

// RunNames runs the checks for each of names (the registries one
// gateway serves: one route each), each under a "== NAME" line when
// there are several, and reports whether every one would pull. A bad
// name is an error before any check runs.
func RunNames(ctx context.Context, cfg Config, names []string, out io.Writer) (ok bool, err error) {
	for _, n := range names {
		if _, err := parseName(n); err != nil {
			return false, err
		}
	}
	ok = true
	for i, n := range names {
		if len(names) > 1 {
			if i > 0 {
				fmt.Fprintln(out)
			}
			fmt.Fprintf(out, "== %s\n", n)
		}
		cfg.Name = n
		good, err := Run(ctx, cfg, out)
		if err != nil {
			return false, err
		}
		ok = ok && good
	}
	return ok, nil
}
