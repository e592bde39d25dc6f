package httpbridge

import (
	"errors"
	"fmt"
	"strings"
)

// repoPattern is one entry of routes[].http.repositories: path
// components of a repository name, where "*" matches exactly one
// component and a final "**" one or more.
type repoPattern struct {
	text  string
	comps []string
}

// parseRepoPattern validates p: "team/app", "team/*", "team/**", "*",
// "**". Literal components follow the distribution name grammar.
func parseRepoPattern(p string) (repoPattern, error) {
	if p == "" {
		return repoPattern{}, errors.New(`empty pattern: want a repository name such as "team/app", "team/*" or "team/**"`)
	}
	comps := strings.Split(p, "/")
	for i, c := range comps {
		switch {
		case c == "**" && i != len(comps)-1:
			return repoPattern{}, fmt.Errorf(`%q: "**" may only be the last component (as in "team/**")`, p)
		case c == "*" || c == "**":
		case strings.Contains(c, "*"):
			return repoPattern{}, fmt.Errorf(`%q: component %q: "*" stands alone for one component and "**" for any depth; partial wildcards are not supported`, p, c)
		case !validComponent(c):
			return repoPattern{}, fmt.Errorf("%q: component %q: want lower-case letters and digits, separated by '.', '_', '__' or '-' (the OCI distribution name grammar)", p, c)
		}
	}
	return repoPattern{text: p, comps: comps}, nil
}

// match reports whether the repository name matches the pattern.
func (p repoPattern) match(name string) bool {
	rest := name
	for i, c := range p.comps {
		if c == "**" {
			return rest != ""
		}
		if rest == "" {
			return false
		}
		comp, tail, more := strings.Cut(rest, "/")
		if c != "*" && c != comp {
			return false
		}
		if !more && i < len(p.comps)-1 {
			return false
		}
		rest = tail
		if !more {
			return i == len(p.comps)-1
		}
	}
	return false
}

// repoAllowList is the route's parsed repositories list; empty allows
// every repository.
type repoAllowList []repoPattern

// newRepoAllowList parses every pattern, reporting all problems together
// with their index.
func newRepoAllowList(patterns []string) (repoAllowList, error) {
	var errs []error
	list := make(repoAllowList, 0, len(patterns))
	for i, s := range patterns {
		p, err := parseRepoPattern(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("repositories[%d]: %w", i, err))
			continue
		}
		list = append(list, p)
	}
	return list, errors.Join(errs...)
}

// allows reports whether name matches one of the patterns.
func (l repoAllowList) allows(name string) bool {
	for _, p := range l {
		if p.match(name) {
			return true
		}
	}
	return false
}
