package main

import "strings"

// httpKiBLimit is issue 15's bound on the proxy's memory per request in
// flight while large blobs stream.
const httpKiBLimit = 64

// httpRows are the table rows of the http scenarios (scenario 7) with
// issue 15's targets: manifests at least the best reference's rate and
// at most its CPU per request, small blobs at 1.3× its rate, large blobs
// at least its Gbit/s within httpKiBLimit per request in flight.
func httpRows(sc string) []row {
	switch {
	case sc == "http-manifest":
		return []row{
			{scenario: sc, key: "req_s", label: "7 http manifest req/s, fresh TLS connection each", higher: true, format: "%.0f"},
			{scenario: sc, key: "cpu_us_req", label: "7 http manifest µs proxy CPU / request", format: "%.0f"},
			{scenario: sc, key: "p50_ms", label: "7 http manifest p50 ms", format: "%.2f", info: true},
			{scenario: sc, key: "p99_ms", label: "7 http manifest p99 ms", format: "%.2f", info: true},
		}
	case sc == "http-blobs":
		return []row{
			{scenario: sc, key: "req_s", label: "7 http small blob req/s, keep-alive connections", higher: true, format: "%.0f", factor: 1.3},
			{scenario: sc, key: "cpu_us_req", label: "7 http small blob µs proxy CPU / request", format: "%.1f", info: true},
			{scenario: sc, key: "p99_ms", label: "7 http small blob p99 ms", format: "%.2f", info: true},
		}
	case strings.HasPrefix(sc, "http-bigblob-"):
		conns := connsLabel(sc)
		return []row{
			{scenario: sc, key: "gbit_s", label: "7 http large blob Gbit/s, " + conns, higher: true, format: "%.2f"},
			{scenario: sc, key: "per_core", label: "7 http large blob Gbit per proxy core-second, " + conns, higher: true, format: "%.2f", info: true},
			{scenario: sc, key: "kib_req", label: "7 http large blob KiB RSS / request in flight, " + conns, format: "%.0f", limit: httpKiBLimit},
			{scenario: sc, key: "live_kib_req", label: "7 http large blob KiB live heap (after a GC) / request in flight, " + conns + " (PROFILE=1 targets)", format: "%.1f", limit: httpKiBLimit},
		}
	}
	return nil
}

// connsLabel is "1 connection" or "N connections" for a scenario named
// NAME-N.
func connsLabel(sc string) string {
	n := sc[strings.LastIndexByte(sc, '-')+1:]
	if n == "1" {
		return "1 connection"
	}
	return n + " connections"
}
