package deploy

import (
	"fmt"
	"net"
	"path"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const (
	namespace       = "snigate"
	containerName   = "snigate"
	configMapName   = "snigate-config"
	configKey       = "snigate.yaml"
	configMountPath = "/etc/snigate" // the image's ENTRYPOINT reads /etc/snigate/snigate.yaml
	edgeNodeLabel   = "node-role.kubernetes.io/edge"
)

// workload is the gateway's DaemonSet or Deployment, reduced to what the
// invariants look at.
type workload struct {
	kind     string
	selector *metav1.LabelSelector
	pod      corev1.PodTemplateSpec
	replicas *int32 // Deployment only
}

func gatewayWorkload(b *bundle) (workload, error) {
	var ws []workload
	for _, d := range find[appsDaemonSet](b) {
		ws = append(ws, workload{kind: "DaemonSet", selector: d.Spec.Selector, pod: d.Spec.Template})
	}
	for _, d := range find[appsDeployment](b) {
		ws = append(ws, workload{kind: "Deployment", selector: d.Spec.Selector, pod: d.Spec.Template, replicas: d.Spec.Replicas})
	}
	if len(ws) != 1 {
		return workload{}, fmt.Errorf("want exactly one DaemonSet or Deployment, got %d", len(ws))
	}
	return ws[0], nil
}

func gatewayConfigOf(b *bundle) (*gatewayConfig, error) {
	for _, cm := range find[corev1.ConfigMap](b) {
		if cm.Name != configMapName {
			continue
		}
		cfg, err := parseGatewayConfig([]byte(cm.Data[configKey]))
		if err != nil {
			return nil, fmt.Errorf("ConfigMap %s key %s: %w", configMapName, configKey, err)
		}
		return cfg, nil
	}
	return nil, fmt.Errorf("no ConfigMap %s", configMapName)
}

func gatewayContainer(pod *corev1.PodSpec) (*corev1.Container, error) {
	for i := range pod.Containers {
		if pod.Containers[i].Name == containerName {
			return &pod.Containers[i], nil
		}
	}
	return nil, fmt.Errorf("no container %q", containerName)
}

// invariant is one named rule over a built bundle.
type invariant struct {
	name string
	fn   func(b *bundle, cfg *gatewayConfig, w workload, c *corev1.Container) []error
}

var invariants = []invariant{
	{"namespace", func(b *bundle, _ *gatewayConfig, _ workload, _ *corev1.Container) []error { return checkNamespace(b) }},
	{"selector", func(_ *bundle, _ *gatewayConfig, w workload, _ *corev1.Container) []error {
		return checkSelectsPod("workload selector", w.selector, w.pod.Labels)
	}},
	{"ports", func(_ *bundle, cfg *gatewayConfig, w workload, c *corev1.Container) []error {
		return checkPorts(cfg, &w.pod.Spec, c)
	}},
	{"probes", func(_ *bundle, cfg *gatewayConfig, _ workload, c *corev1.Container) []error {
		return checkProbes(cfg, c)
	}},
	{"grace", func(_ *bundle, cfg *gatewayConfig, w workload, c *corev1.Container) []error {
		return checkGrace(cfg, &w.pod.Spec, c)
	}},
	{"security", func(_ *bundle, _ *gatewayConfig, w workload, c *corev1.Container) []error {
		return checkSecurity(&w.pod.Spec, c)
	}},
	{"resources", func(_ *bundle, _ *gatewayConfig, _ workload, c *corev1.Container) []error { return checkResources(c) }},
	{"scrape", func(_ *bundle, cfg *gatewayConfig, w workload, _ *corev1.Container) []error {
		return checkScrape(cfg, w.pod.Annotations)
	}},
	{"serviceaccount", func(b *bundle, _ *gatewayConfig, w workload, _ *corev1.Container) []error {
		return checkServiceAccount(b, &w.pod.Spec)
	}},
	{"antiaffinity", func(_ *bundle, _ *gatewayConfig, w workload, _ *corev1.Container) []error {
		return checkAntiAffinity(&w.pod.Spec, w.pod.Labels)
	}},
	{"several", func(_ *bundle, cfg *gatewayConfig, w workload, _ *corev1.Container) []error {
		return checkSeveralGateways(cfg, w)
	}},
	{"pdb", func(b *bundle, _ *gatewayConfig, w workload, _ *corev1.Container) []error {
		return checkPDB(b, w.pod.Labels)
	}},
	{"volumes", func(_ *bundle, cfg *gatewayConfig, w workload, c *corev1.Container) []error {
		return checkVolumes(cfg, &w.pod.Spec, c)
	}},
	{"dns", func(_ *bundle, _ *gatewayConfig, w workload, _ *corev1.Container) []error {
		return checkDNSPolicy(&w.pod.Spec)
	}},
	{"image", func(_ *bundle, cfg *gatewayConfig, _ workload, c *corev1.Container) []error {
		return checkImage(cfg, c)
	}},
	{"placement", func(_ *bundle, _ *gatewayConfig, w workload, _ *corev1.Container) []error {
		return checkPlacement(w, &w.pod.Spec)
	}},
	{"service", func(b *bundle, _ *gatewayConfig, w workload, c *corev1.Container) []error {
		return checkServices(b, w.pod.Labels, c)
	}},
	{"networkpolicy", func(b *bundle, cfg *gatewayConfig, w workload, c *corev1.Container) []error {
		return checkNetworkPolicies(b, cfg, w, c)
	}},
}

// bundleErrors runs every invariant; the map is keyed by invariant name.
func bundleErrors(b *bundle) (map[string][]error, error) {
	w, err := gatewayWorkload(b)
	if err != nil {
		return nil, err
	}
	cfg, err := gatewayConfigOf(b)
	if err != nil {
		return nil, err
	}
	c, err := gatewayContainer(&w.pod.Spec)
	if err != nil {
		return nil, err
	}
	out := map[string][]error{}
	for _, inv := range invariants {
		out[inv.name] = inv.fn(b, cfg, w, c)
	}
	return out, nil
}

func checkBundle(t *testing.T, b *bundle) {
	t.Helper()
	errs, err := bundleErrors(b)
	if err != nil {
		t.Fatalf("%s: %v", b.dir, err)
	}
	for _, inv := range invariants {
		t.Run(inv.name, func(t *testing.T) {
			for _, err := range errs[inv.name] {
				t.Error(err)
			}
		})
	}
}

func checkNamespace(b *bundle) []error {
	var errs []error
	for _, o := range b.objects {
		m, ok := o.(metav1.Object)
		if !ok {
			continue
		}
		if _, isNS := o.(*corev1.Namespace); !isNS && m.GetNamespace() != namespace {
			errs = append(errs, fmt.Errorf("%T %s: namespace %q, want %q", o, m.GetName(), m.GetNamespace(), namespace))
		}
	}
	return errs
}

func checkSelectsPod(what string, sel *metav1.LabelSelector, podLabels map[string]string) []error {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return []error{fmt.Errorf("%s: %v", what, err)}
	}
	if s.Empty() || !s.Matches(labels.Set(podLabels)) {
		return []error{fmt.Errorf("%s %q does not select the pod labels %v", what, s, podLabels)}
	}
	return nil
}

// containerPort resolves a probe or Service port (name or number).
func containerPort(c *corev1.Container, p intstr.IntOrString, proto corev1.Protocol) (int32, bool) {
	for _, cp := range c.Ports {
		if cp.Protocol == "" {
			cp.Protocol = corev1.ProtocolTCP
		}
		if cp.Protocol != proto {
			continue
		}
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return cp.ContainerPort, true
		}
	}
	return 0, false
}

type portKey struct {
	port  int32
	proto corev1.Protocol
}

// wantPorts are the container ports the configuration's listeners need.
func wantPorts(cfg *gatewayConfig) (map[portKey]string, error) {
	want := map[portKey]string{}
	add := func(key, addr string, protos ...corev1.Protocol) error {
		if addr == "" {
			return nil
		}
		p, err := listenPort(addr)
		for _, proto := range protos {
			want[portKey{int32(p), proto}] = key
		}
		return err
	}
	var errs []error
	for _, a := range cfg.Listen.TLS {
		errs = append(errs, add("listen.tls", a, corev1.ProtocolTCP))
	}
	errs = append(errs,
		add("listen.connect", cfg.Listen.Connect, corev1.ProtocolTCP),
		add("listen.dns", cfg.Listen.DNS, corev1.ProtocolTCP, corev1.ProtocolUDP),
		add("listen.admin", cfg.Listen.Admin, corev1.ProtocolTCP))
	return want, firstErr(errs)
}

func firstErr(errs []error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func checkPorts(cfg *gatewayConfig, pod *corev1.PodSpec, c *corev1.Container) []error {
	want, err := wantPorts(cfg)
	if err != nil {
		return []error{err}
	}
	var errs []error
	have := map[portKey]bool{}
	for _, cp := range c.Ports {
		proto := cp.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		k := portKey{cp.ContainerPort, proto}
		have[k] = true
		if _, ok := want[k]; !ok {
			errs = append(errs, fmt.Errorf("containerPort %d/%s (%s): no listener in snigate.yaml uses it", k.port, k.proto, cp.Name))
		}
		if pod.HostNetwork && cp.HostPort != cp.ContainerPort {
			errs = append(errs, fmt.Errorf("containerPort %s: hostNetwork wants hostPort == containerPort, got %d", cp.Name, cp.HostPort))
		}
	}
	for k, key := range want {
		if !have[k] {
			errs = append(errs, fmt.Errorf("%s needs containerPort %d/%s, which the container does not declare", key, k.port, k.proto))
		}
	}
	return errs
}

func adminPort(cfg *gatewayConfig) (int32, error) {
	if strings.HasPrefix(cfg.Listen.Admin, "unix:") || cfg.Listen.Admin == "" {
		return 0, fmt.Errorf("listen.admin %q: the kubelet probes need a TCP admin listener", cfg.Listen.Admin)
	}
	host, _, _ := net.SplitHostPort(cfg.Listen.Admin)
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() || host == "localhost" {
		return 0, fmt.Errorf("listen.admin %q: loopback is unreachable for the kubelet's probes and Prometheus", cfg.Listen.Admin)
	}
	p, err := listenPort(cfg.Listen.Admin)
	return int32(p), err
}

func checkProbes(cfg *gatewayConfig, c *corev1.Container) []error {
	admin, err := adminPort(cfg)
	if err != nil {
		return []error{err}
	}
	var errs []error
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"readinessProbe", c.ReadinessProbe, "/readyz"}, {"livenessProbe", c.LivenessProbe, "/healthz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			errs = append(errs, fmt.Errorf("%s: want an httpGet probe on %s", p.name, p.path))
			continue
		}
		g := p.probe.HTTPGet
		if g.Path != p.path {
			errs = append(errs, fmt.Errorf("%s: path %q, want %q", p.name, g.Path, p.path))
		}
		if port, ok := containerPort(c, g.Port, corev1.ProtocolTCP); !ok || port != admin {
			errs = append(errs, fmt.Errorf("%s: port %s is not the admin port %d of listen.admin", p.name, g.Port.String(), admin))
		}
		if g.Host != "" || (g.Scheme != "" && g.Scheme != corev1.URISchemeHTTP) {
			errs = append(errs, fmt.Errorf("%s: want plain HTTP to the pod address", p.name))
		}
	}
	return errs
}

func checkGrace(cfg *gatewayConfig, pod *corev1.PodSpec, c *corev1.Container) []error {
	if pod.TerminationGracePeriodSeconds == nil {
		return []error{fmt.Errorf("terminationGracePeriodSeconds unset (30s default): want above timeouts.drain")}
	}
	budget := cfg.drain().Seconds()
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
		budget += float64(c.Lifecycle.PreStop.Sleep.Seconds)
	}
	if g := float64(*pod.TerminationGracePeriodSeconds); g <= budget {
		return []error{fmt.Errorf("terminationGracePeriodSeconds %v: want above preStop sleep + timeouts.drain = %vs", g, budget)}
	}
	return nil
}

func checkSecurity(pod *corev1.PodSpec, c *corev1.Container) []error {
	var errs []error
	psc, sc := pod.SecurityContext, c.SecurityContext
	if sc == nil {
		return []error{fmt.Errorf("container has no securityContext")}
	}
	nonRoot := sc.RunAsNonRoot != nil && *sc.RunAsNonRoot || psc != nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot
	if !nonRoot {
		errs = append(errs, fmt.Errorf("runAsNonRoot: want true"))
	}
	if psc != nil && psc.RunAsUser != nil && *psc.RunAsUser == 0 || sc.RunAsUser != nil && *sc.RunAsUser == 0 {
		errs = append(errs, fmt.Errorf("runAsUser 0"))
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		errs = append(errs, fmt.Errorf("readOnlyRootFilesystem: want true"))
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		errs = append(errs, fmt.Errorf("allowPrivilegeEscalation: want false"))
	}
	if sc.Privileged != nil && *sc.Privileged {
		errs = append(errs, fmt.Errorf("privileged: want false"))
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		!slices.Equal(sc.Capabilities.Add, []corev1.Capability{"NET_BIND_SERVICE"}) {
		errs = append(errs, fmt.Errorf("capabilities %+v: want drop [ALL], add [NET_BIND_SERVICE]", sc.Capabilities))
	}
	seccomp := sc.SeccompProfile
	if seccomp == nil && psc != nil {
		seccomp = psc.SeccompProfile
	}
	if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
		errs = append(errs, fmt.Errorf("seccompProfile: want RuntimeDefault"))
	}
	return errs
}

func checkResources(c *corev1.Container) []error {
	var errs []error
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, okReq := c.Resources.Requests[r]
		lim, okLim := c.Resources.Limits[r]
		switch {
		case !okReq || !okLim:
			errs = append(errs, fmt.Errorf("resources: want requests and limits for %s", r))
		case req.Cmp(lim) > 0:
			errs = append(errs, fmt.Errorf("resources: %s request %s above limit %s", r, req.String(), lim.String()))
		}
	}
	return errs
}

func checkScrape(cfg *gatewayConfig, ann map[string]string) []error {
	admin, err := adminPort(cfg)
	if err != nil {
		return []error{err}
	}
	want := map[string]string{
		"prometheus.io/scrape": "true",
		"prometheus.io/port":   fmt.Sprint(admin),
		"prometheus.io/path":   "/metrics",
	}
	var errs []error
	for k, v := range want {
		if ann[k] != v {
			errs = append(errs, fmt.Errorf("pod annotation %s = %q, want %q", k, ann[k], v))
		}
	}
	return errs
}

func checkServiceAccount(b *bundle, pod *corev1.PodSpec) []error {
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		return []error{fmt.Errorf("pod automountServiceAccountToken: want false")}
	}
	for _, sa := range find[corev1.ServiceAccount](b) {
		if sa.Name != pod.ServiceAccountName {
			continue
		}
		if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
			return []error{fmt.Errorf("ServiceAccount %s: automountServiceAccountToken want false", sa.Name)}
		}
		return nil
	}
	return []error{fmt.Errorf("serviceAccountName %q: no such ServiceAccount in the build", pod.ServiceAccountName)}
}

func checkAntiAffinity(pod *corev1.PodSpec, podLabels map[string]string) []error {
	if pod.Affinity == nil || pod.Affinity.PodAntiAffinity == nil {
		return []error{fmt.Errorf("no podAntiAffinity")}
	}
	for _, term := range pod.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if term.TopologyKey == "kubernetes.io/hostname" && checkSelectsPod("anti-affinity", term.LabelSelector, podLabels) == nil {
			return nil
		}
	}
	return []error{fmt.Errorf("podAntiAffinity: want a required term on kubernetes.io/hostname selecting the gateway's own pods")}
}

// checkSeveralGateways: one gateway is one point of failure for every
// pull. A Deployment runs two replicas or more (spread by the
// anti-affinity above); a DaemonSet's gateways are all in dns.answer,
// two or more, and check each other (dns.answer_check), so that a dead
// one leaves the answers.
func checkSeveralGateways(cfg *gatewayConfig, w workload) []error {
	if w.kind == "Deployment" {
		if w.replicas == nil || *w.replicas < 2 {
			return []error{fmt.Errorf("replicas: want 2 or more")}
		}
		return nil
	}
	switch {
	case cfg.DNS == nil || len(cfg.DNS.Answer) < 2:
		return []error{fmt.Errorf("dns.answer: want every gateway, two or more")}
	case cfg.DNS.AnswerCheck == nil:
		return []error{fmt.Errorf("dns.answer_check: want it, so that a dead gateway leaves the answers")}
	}
	return nil
}

func checkPDB(b *bundle, podLabels map[string]string) []error {
	pdbs := find[policyPDB](b)
	if len(pdbs) != 1 {
		return []error{fmt.Errorf("want one PodDisruptionBudget, got %d", len(pdbs))}
	}
	p := pdbs[0]
	errs := checkSelectsPod("PodDisruptionBudget selector", p.Spec.Selector, podLabels)
	if (p.Spec.MaxUnavailable == nil) == (p.Spec.MinAvailable == nil) {
		errs = append(errs, fmt.Errorf("PodDisruptionBudget: want exactly one of maxUnavailable and minAvailable"))
	}
	return errs
}

// checkVolumes: the configuration comes from the ConfigMap at
// /etc/snigate, every certificate path from a Secret volume, all as whole
// directories (a subPath mount never sees the kubelet's ..data swap).
func checkVolumes(cfg *gatewayConfig, pod *corev1.PodSpec, c *corev1.Container) []error {
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	var errs []error
	mountOf := func(file string) (corev1.VolumeMount, bool) {
		for _, m := range c.VolumeMounts {
			if strings.HasPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/") {
				return m, true
			}
		}
		return corev1.VolumeMount{}, false
	}
	for _, m := range c.VolumeMounts {
		if m.SubPath != "" || m.SubPathExpr != "" {
			errs = append(errs, fmt.Errorf("volumeMount %s uses subPath: updates would never reach snigate", m.Name))
		}
		if !m.ReadOnly {
			errs = append(errs, fmt.Errorf("volumeMount %s: want readOnly", m.Name))
		}
	}
	if m, ok := mountOf(path.Join(configMountPath, configKey)); !ok || m.MountPath != configMountPath ||
		vols[m.Name].ConfigMap == nil || vols[m.Name].ConfigMap.Name != configMapName {
		errs = append(errs, fmt.Errorf("%s/%s: want ConfigMap %s mounted at %s", configMountPath, configKey, configMapName, configMountPath))
	}
	for _, f := range cfg.certificatePaths() {
		m, ok := mountOf(f)
		if !ok || vols[m.Name].Secret == nil {
			errs = append(errs, fmt.Errorf("%s (snigate.yaml): not inside a Secret volume mount", f))
			continue
		}
		if mode := vols[m.Name].Secret.DefaultMode; mode == nil || *mode&0o007 != 0 {
			errs = append(errs, fmt.Errorf("Secret volume %s: defaultMode must give others no access", m.Name))
		}
	}
	return errs
}

func checkDNSPolicy(pod *corev1.PodSpec) []error {
	if pod.DNSPolicy != corev1.DNSDefault {
		return []error{fmt.Errorf("dnsPolicy %q: want Default (the node's resolver; see kubernetes/README.md)", pod.DNSPolicy)}
	}
	return nil
}

// checkImage: the gateway's own image must not come through the gateway.
func checkImage(cfg *gatewayConfig, c *corev1.Container) []error {
	host, _, _ := strings.Cut(c.Image, "/")
	if strings.ContainsAny(host, ".:") && cfg.isRouted(strings.Split(host, ":")[0]) {
		return []error{fmt.Errorf("image %s is pulled from %s, a name routed through snigate itself", c.Image, host)}
	}
	if name, tag, _ := strings.Cut(path.Base(c.Image), ":"); tag == "" || tag == "latest" || name == c.Image {
		return []error{fmt.Errorf("image %q: want repository/name:version (the kustomization's images: sets it)", c.Image)}
	}
	if c.ImagePullPolicy != corev1.PullIfNotPresent {
		return []error{fmt.Errorf("imagePullPolicy %q: want IfNotPresent (a restart must not depend on a pull)", c.ImagePullPolicy)}
	}
	return nil
}

func checkPlacement(w workload, pod *corev1.PodSpec) []error {
	if w.kind != "DaemonSet" {
		return nil
	}
	var errs []error
	if !pod.HostNetwork {
		errs = append(errs, fmt.Errorf("DaemonSet: want hostNetwork (see kubernetes/README.md)"))
	}
	if _, ok := pod.NodeSelector[edgeNodeLabel]; !ok {
		errs = append(errs, fmt.Errorf("DaemonSet: nodeSelector %v lacks %s", pod.NodeSelector, edgeNodeLabel))
	}
	if !slices.ContainsFunc(pod.Tolerations, func(t corev1.Toleration) bool { return t.Key == edgeNodeLabel }) {
		errs = append(errs, fmt.Errorf("DaemonSet: no toleration for %s", edgeNodeLabel))
	}
	return errs
}

func checkServices(b *bundle, podLabels map[string]string, c *corev1.Container) []error {
	var errs []error
	for _, s := range find[corev1.Service](b) {
		sel := &metav1.LabelSelector{MatchLabels: s.Spec.Selector}
		errs = append(errs, checkSelectsPod("Service "+s.Name+" selector", sel, podLabels)...)
		if s.Spec.Type == corev1.ServiceTypeLoadBalancer && s.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
			errs = append(errs, fmt.Errorf("Service %s: want externalTrafficPolicy Local (client addresses)", s.Name))
		}
		for _, p := range s.Spec.Ports {
			if _, ok := containerPort(c, p.TargetPort, p.Protocol); !ok {
				errs = append(errs, fmt.Errorf("Service %s port %s: targetPort %s is no container port", s.Name, p.Name, p.TargetPort.String()))
			}
		}
	}
	return errs
}

// checkNetworkPolicies: a policy must select the pods, and may open the
// admin port only to chosen sources.
func checkNetworkPolicies(b *bundle, cfg *gatewayConfig, w workload, c *corev1.Container) []error {
	admin, err := adminPort(cfg)
	if err != nil {
		return []error{err}
	}
	var errs []error
	for _, np := range find[networkingNetworkPolicy](b) {
		errs = append(errs, checkSelectsPod("NetworkPolicy "+np.Name, &np.Spec.PodSelector, w.pod.Labels)...)
		for _, rule := range np.Spec.Ingress {
			for _, p := range rule.Ports {
				if p.Port != nil && p.Port.IntValue() == int(admin) && len(rule.From) == 0 {
					errs = append(errs, fmt.Errorf("NetworkPolicy %s opens the admin port %d to everyone", np.Name, admin))
				}
			}
			if len(rule.Ports) == 0 && len(rule.From) == 0 {
				errs = append(errs, fmt.Errorf("NetworkPolicy %s: a rule with no ports and no sources allows everything", np.Name))
			}
		}
	}
	if len(find[networkingNetworkPolicy](b)) > 0 && w.pod.Spec.HostNetwork {
		errs = append(errs, fmt.Errorf("NetworkPolicy with hostNetwork pods: most network plugins do not enforce it there"))
	}
	return errs
}
