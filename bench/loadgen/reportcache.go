package main

import (
	"fmt"
	"strings"
)

// cacheRows are the table rows of the cache scenarios (issue 16). Their
// targets: the registry sends the layer once (at most 1 layer), and,
// against the bridge without a cache (comparison.cacheBase), at most its
// CPU per GB and at least its throughput.
func cacheRows(sc string) []row {
	switch {
	case sc == "cache-pull":
		return []row{
			{scenario: sc, key: "registry_layers", label: "8 cache pull: layers the registry sent, all nodes at once", format: "%.2f", limit: 1},
			{scenario: sc, key: "last_s", label: "8 cache pull: s until the last node is done", format: "%.2f", info: true},
			{scenario: sc, key: "cpu_s_gb", label: "8 cache pull: proxy CPU s / GB served", format: "%.2f"},
		}
	case strings.HasPrefix(sc, "cache-hit-"):
		streams := streamsLabel(sc)
		return []row{
			{scenario: sc, key: "gbit_s", label: "8 cache hit Gbit/s, " + streams, higher: true, format: "%.2f"},
			{scenario: sc, key: "cpu_s_gb", label: "8 cache hit proxy CPU s / GB served, " + streams, format: "%.2f"},
			{scenario: sc, key: "registry_layers", label: "8 cache hit: layers the registry sent meanwhile, " + streams, format: "%.2f", info: true},
		}
	}
	return nil
}

// reference is the value a subject's row is judged against and whose it
// is: the base proxy for rows marked vsBase (idle memory: HAProxy), in
// the cache scenarios the bridge without a cache (cacheBase), elsewhere
// the best of the reference proxies.
func (c comparison) reference(s *summary, rw row) (float64, string, bool) {
	if rw.vsBase {
		v, ok := s.value(rw.scenario, c.base, rw.key)
		return v, c.base, ok
	}
	if strings.HasPrefix(rw.scenario, "cache-") && c.cacheBase != "" {
		v, ok := s.value(rw.scenario, c.cacheBase, rw.key)
		return v, c.cacheBase, ok
	}
	return c.best(s, rw)
}

// referenceLabel names the ratio column's reference.
func (c comparison) referenceLabel() string {
	label := "best of " + strings.Join(c.refs, ", ")
	if c.cacheBase != "" {
		label += fmt.Sprintf(" (cache rows: %s)", c.cacheBase)
	}
	return label
}
