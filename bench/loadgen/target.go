package main

import (
	"fmt"
	"strconv"
	"strings"
)

// target is one system under test: a proxy, or the upstream itself for the
// direct baseline.
type target struct {
	Name   string
	Splice string // address for the splice scenarios; "" skips them
	Bridge string // address for the bridge scenarios; "" skips them
	HTTP   string // address for the http scenarios (the route of SNI httpName); "" skips them
	PID    int    // the proxy's root process (its descendants are counted too)
	// Direct marks the no-proxy baseline: the bridge client then presents
	// the client certificate and verifies the upstream's name itself.
	Direct bool
	// Pprof is the host:port of a net/http/pprof and expvar endpoint
	// (bench/snigate-pprof); "" means none.
	Pprof string
	// Purge is the host:port of snigate's admin listener: the target's
	// http route has a cache, emptied before each cache-pull round with
	// POST /api/cache/purge. CacheDir is a proxy's cache directory
	// (nginx's proxy_cache_path), emptied by removing what it holds.
	// A target with either takes part in the cache scenarios only.
	Purge    string
	CacheDir string
}

// cached reports whether t is a proxy with a cache.
func (t target) cached() bool { return t.Purge != "" || t.CacheDir != "" }

// parseTarget parses "name=N,splice=ADDR,bridge=ADDR,http=ADDR,pid=P,direct=1,pprof=ADDR,purge=ADDR,cachedir=DIR".
func parseTarget(s string) (target, error) {
	var t target
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return t, fmt.Errorf("target %q: want key=value, got %q", s, kv)
		}
		var err error
		switch k {
		case "name":
			t.Name = v
		case "splice":
			t.Splice = v
		case "bridge":
			t.Bridge = v
		case "http":
			t.HTTP = v
		case "pid":
			t.PID, err = strconv.Atoi(v)
		case "direct":
			t.Direct, err = strconv.ParseBool(v)
		case "pprof":
			t.Pprof = v
		case "purge":
			t.Purge = v
		case "cachedir":
			t.CacheDir = v
		default:
			err = fmt.Errorf("unknown key %q (want name, splice, bridge, http, pid, direct, pprof, purge or cachedir)", k)
		}
		if err != nil {
			return t, fmt.Errorf("target %q: %s: %w", s, k, err)
		}
	}
	if t.Name == "" {
		return t, fmt.Errorf("target %q: name is required", s)
	}
	return t, nil
}

// targetList is a repeatable -target flag.
type targetList []target

func (l *targetList) String() string { return fmt.Sprint(len(*l), " targets") }

func (l *targetList) Set(s string) error {
	t, err := parseTarget(s)
	if err != nil {
		return err
	}
	*l = append(*l, t)
	return nil
}
