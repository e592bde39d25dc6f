package gateway

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Values of snigate_build_info's labels when the binary does not record
// them (a build outside a module, or without VCS stamping).
const (
	unknownVersion  = "(devel)"
	unknownRevision = "unknown"
)

// newBuildInfo returns snigate_build_info{version,revision,goversion} = 1,
// read from the binary's build information.
func newBuildInfo() prometheus.Collector {
	version, revision, goVersion := buildLabels(debug.ReadBuildInfo())
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "snigate_build_info",
		Help: "Always 1; the labels say which build runs: the main module's version, the VCS revision and the Go version.",
		ConstLabels: prometheus.Labels{
			"version": version, "revision": revision, "goversion": goVersion,
		},
	})
	g.Set(1)
	return g
}

// buildLabels returns the main module's version, the vcs.revision setting
// and the Go version of bi, with placeholders for what it lacks.
func buildLabels(bi *debug.BuildInfo, ok bool) (version, revision, goVersion string) {
	version, revision, goVersion = unknownVersion, unknownRevision, runtime.Version()
	if !ok || bi == nil {
		return version, revision, goVersion
	}
	if bi.Main.Version != "" {
		version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		goVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && s.Value != "" {
			revision = s.Value
		}
	}
	return version, revision, goVersion
}

// version is GET /api/version: the labels of snigate_build_info.
type version struct {
	Version   string `json:"version"`
	Revision  string `json:"revision"`
	GoVersion string `json:"go_version"`
}

func buildVersion() version {
	v, r, g := buildLabels(debug.ReadBuildInfo())
	return version{Version: v, Revision: r, GoVersion: g}
}
