package deploy

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

const kubernetesDir = "kubernetes"

// typedKinds are the only kinds the manifests may contain, each with the
// API version it must use and a fresh typed object to decode into.
var typedKinds = map[string]struct {
	apiVersion string
	new        func() any
}{
	"Namespace":           {"v1", func() any { return new(corev1.Namespace) }},
	"ServiceAccount":      {"v1", func() any { return new(corev1.ServiceAccount) }},
	"ConfigMap":           {"v1", func() any { return new(corev1.ConfigMap) }},
	"Service":             {"v1", func() any { return new(corev1.Service) }},
	"DaemonSet":           {"apps/v1", func() any { return new(appsv1.DaemonSet) }},
	"Deployment":          {"apps/v1", func() any { return new(appsv1.Deployment) }},
	"PodDisruptionBudget": {"policy/v1", func() any { return new(policyv1.PodDisruptionBudget) }},
	"NetworkPolicy":       {"networking.k8s.io/v1", func() any { return new(networkingv1.NetworkPolicy) }},
}

// decodeStrict decodes one YAML document into its typed API object; an
// unknown field, a wrong type or an unexpected kind is an error.
func decodeStrict(doc []byte) (any, error) {
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	k, ok := typedKinds[tm.Kind]
	if !ok {
		return nil, fmt.Errorf("kind %q: not one this test knows (add it to typedKinds)", tm.Kind)
	}
	if tm.APIVersion != k.apiVersion {
		return nil, fmt.Errorf("%s: apiVersion %q, want %q", tm.Kind, tm.APIVersion, k.apiVersion)
	}
	obj := k.new()
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	return obj, nil
}

func splitDocs(data []byte) [][]byte {
	var docs [][]byte
	for _, d := range bytes.Split(data, []byte("\n---")) {
		if len(bytes.TrimSpace(stripComments(d))) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

func stripComments(b []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

// kustomizationDirs finds every directory under kubernetes/ with a kustomization.yaml.
func kustomizationDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(kubernetesDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "kustomization.yaml" {
			dirs = append(dirs, filepath.Dir(p))
		}
		return err
	})
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no kustomization under %s: %v", kubernetesDir, err)
	}
	return dirs
}

// TestManifestFilesStrict decodes every manifest file (not the
// kustomizations) strictly into the Kubernetes API types.
func TestManifestFilesStrict(t *testing.T) {
	err := filepath.WalkDir(kubernetesDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".yaml" || d.Name() == "kustomization.yaml" {
			return err
		}
		t.Run(p, func(t *testing.T) {
			for i, doc := range splitDocs(readFile(t, p)) {
				if _, err := decodeStrict(doc); err != nil {
					t.Errorf("%s (document %d): %v", p, i+1, err)
				}
			}
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestKustomizations checks each kustomization file and builds it with
// kustomize's own library, then checks the built objects' invariants.
func TestKustomizations(t *testing.T) {
	for _, dir := range kustomizationDirs(t) {
		t.Run(dir, func(t *testing.T) {
			checkKustomizationFile(t, dir)
			b := buildKustomization(t, dir)
			checkBundle(t, b)
		})
	}
}

func checkKustomizationFile(t *testing.T, dir string) {
	t.Helper()
	var k types.Kustomization
	if err := yaml.UnmarshalStrict(readFile(t, filepath.Join(dir, "kustomization.yaml")), &k); err != nil {
		t.Fatalf("%s/kustomization.yaml: %v", dir, err)
	}
	paths := slices.Clone(k.Resources)
	for _, p := range k.Patches {
		if p.Path != "" {
			paths = append(paths, p.Path)
		}
	}
	for _, p := range paths {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s/kustomization.yaml names %q, which does not exist", dir, p)
		}
	}
}

// bundle is the output of one kustomize build, typed.
type bundle struct {
	dir     string
	objects []any
}

func buildKustomization(t *testing.T, dir string) *bundle {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	b := &bundle{dir: dir}
	for _, r := range rm.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		obj, err := decodeStrict(y)
		if err != nil {
			t.Fatalf("kustomize build %s: %s/%s: %v", dir, r.GetKind(), r.GetName(), err)
		}
		b.objects = append(b.objects, obj)
	}
	return b
}

func find[T any](b *bundle) []*T {
	var out []*T
	for _, o := range b.objects {
		if v, ok := o.(*T); ok {
			out = append(out, v)
		}
	}
	return out
}

// Short names for the typed objects the invariants look up.
type (
	appsDaemonSet           = appsv1.DaemonSet
	appsDeployment          = appsv1.Deployment
	policyPDB               = policyv1.PodDisruptionBudget
	coreConfigMap           = corev1.ConfigMap
	networkingNetworkPolicy = networkingv1.NetworkPolicy
)
