package deploy

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// invariantMutation breaks the built base one way and names the
// invariant that must notice.
type invariantMutation struct {
	name, invariant string
	mutate          func(b *bundle)
}

// invariantMutations are the ways TestInvariantsCatchMistakes breaks the base.
func invariantMutations(t *testing.T) []invariantMutation {
	ds := func(b *bundle) *appsDaemonSet { return find[appsDaemonSet](b)[0] }
	ctr := func(b *bundle) *corev1.Container { return &ds(b).Spec.Template.Spec.Containers[0] }
	setConfig := func(b *bundle, from, to string) {
		cm := find[corev1.ConfigMap](b)[0]
		if !strings.Contains(cm.Data[configKey], from) {
			t.Fatalf("ConfigMap has no %q to replace", from)
		}
		cm.Data[configKey] = strings.Replace(cm.Data[configKey], from, to, 1)
	}
	return []invariantMutation{
		{"readiness path", "probes", func(b *bundle) { ctr(b).ReadinessProbe.HTTPGet.Path = "/ready" }},
		{"liveness port", "probes", func(b *bundle) { ctr(b).LivenessProbe.HTTPGet.Port = intstr.FromString("tls") }},
		{"admin moved", "probes", func(b *bundle) { setConfig(b, `admin: "0.0.0.0:9090"`, `admin: "0.0.0.0:9091"`) }},
		{"admin loopback", "probes", func(b *bundle) { setConfig(b, `admin: "0.0.0.0:9090"`, `admin: "127.0.0.1:9090"`) }},
		{"grace below drain", "grace", func(b *bundle) { ds(b).Spec.Template.Spec.TerminationGracePeriodSeconds = new(int64(30)) }},
		{"drain above grace", "grace", func(b *bundle) { setConfig(b, "drain: 30s", "drain: 2m") }},
		{"tls port missing", "ports", func(b *bundle) { setConfig(b, `tls: [":443"]`, `tls: [":443", ":8443"]`) }},
		{"stale port", "ports", func(b *bundle) { setConfig(b, `dns: ":53"`, `dns: ":5353"`) }},
		{"root", "security", func(b *bundle) { ds(b).Spec.Template.Spec.SecurityContext.RunAsUser = new(int64(0)) }},
		{"writable root", "security", func(b *bundle) { ctr(b).SecurityContext.ReadOnlyRootFilesystem = new(false) }},
		{"escalation", "security", func(b *bundle) { ctr(b).SecurityContext.AllowPrivilegeEscalation = new(true) }},
		{"extra capability", "security", func(b *bundle) {
			ctr(b).SecurityContext.Capabilities.Add = append(ctr(b).SecurityContext.Capabilities.Add, "NET_ADMIN")
		}},
		{"one gateway answered", "several", func(b *bundle) {
			setConfig(b, `answer: ["192.0.2.21", "192.0.2.22"]`, `answer: ["192.0.2.21"]`)
		}},
		{"no answer_check", "several", func(b *bundle) {
			setConfig(b, "  answer_check:\n    port: 443\n    interval: 2s\n    timeout: 1s\n    fall: 2\n    rise: 2\n", "")
		}},
		{"no anti-affinity", "antiaffinity", func(b *bundle) { ds(b).Spec.Template.Spec.Affinity = nil }},
		{"pdb selects nothing", "pdb", func(b *bundle) {
			find[policyPDB](b)[0].Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
		}},
		{"subPath", "volumes", func(b *bundle) { ctr(b).VolumeMounts[0].SubPath = configKey }},
		{"cert outside secret", "volumes", func(b *bundle) {
			setConfig(b, "/run/secrets/snigate/serve/tls.key", "/etc/snigate/tls.key")
		}},
		{"no memory limit", "resources", func(b *bundle) { delete(ctr(b).Resources.Limits, corev1.ResourceMemory) }},
		{"no scrape", "scrape", func(b *bundle) { delete(ds(b).Spec.Template.Annotations, "prometheus.io/scrape") }},
		{"token mounted", "serviceaccount", func(b *bundle) { ds(b).Spec.Template.Spec.AutomountServiceAccountToken = new(true) }},
		{"cluster dns", "dns", func(b *bundle) { ds(b).Spec.Template.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet }},
		{"image via gateway", "image", func(b *bundle) { ctr(b).Image = "registry.example.test/snigate/snigate:0.1.0" }},
		{"untagged image", "image", func(b *bundle) { ctr(b).Image = "snigate" }},
		{"no edge selector", "placement", func(b *bundle) { delete(ds(b).Spec.Template.Spec.NodeSelector, edgeNodeLabel) }},
	}
}

// TestInvariantsCatchMistakes breaks the built base one way at a time and
// expects the named invariant to notice: a check that cannot fail proves
// nothing.
func TestInvariantsCatchMistakes(t *testing.T) {
	tests := invariantMutations(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := buildKustomization(t, kubernetesDir+"/base")
			tt.mutate(b)
			errs, err := bundleErrors(b)
			if err != nil {
				t.Fatal(err)
			}
			if len(errs[tt.invariant]) == 0 {
				t.Fatalf("invariant %q did not notice", tt.invariant)
			}
		})
	}
}
