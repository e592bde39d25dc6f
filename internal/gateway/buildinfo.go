package gateway

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/snigate/snigate/internal/buildinfo"
)

// newBuildInfo returns snigate_build_info{version,revision,goversion} = 1,
// for the running build (internal/buildinfo).
func newBuildInfo() prometheus.Collector {
	version, revision, goVersion := buildLabels(buildinfo.Get())
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "snigate_build_info",
		Help: "Always 1; the labels say which build runs: the version, the VCS revision and the Go version.",
		ConstLabels: prometheus.Labels{
			"version": version, "revision": revision, "goversion": goVersion,
		},
	})
	g.Set(1)
	return g
}

// buildLabels returns the label values of snigate_build_info for info.
func buildLabels(info buildinfo.Info) (version, revision, goVersion string) {
	return info.Version, info.Commit, info.GoVersion
}

// version is GET /api/version: the labels of snigate_build_info.
type version struct {
	Version   string `json:"version"`
	Revision  string `json:"revision"`
	GoVersion string `json:"go_version"`
}

func buildVersion() version {
	v, r, g := buildLabels(buildinfo.Get())
	return version{Version: v, Revision: r, GoVersion: g}
}
