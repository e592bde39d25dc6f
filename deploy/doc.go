// Package deploy holds no code: it is the test module for snigate's
// deployment files (systemd unit, container image, Kubernetes manifests,
// node and CoreDNS recipes, Prometheus rules, Grafana dashboard).
package deploy
