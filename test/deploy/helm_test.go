package deploy

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/podtrace/podtrace/test/cluster"
)

// chart is the Helm chart, beside the kustomize manifests.
var chart = filepath.Join("..", "..", "deploy", "helm", "podtrace")

// helmPath finds helm: $PODTRACE_HELM, else the one make helm builds
// (hack/build-helm.sh) beside the control plane; the tests are skipped
// without it.
func helmPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PODTRACE_HELM"); p != "" {
		return p
	}
	dir := os.Getenv(cluster.BinDirEnv)
	if dir == "" {
		dir = filepath.Join("..", "..", "_output", "bin")
	}
	p := filepath.Join(dir, "helm")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no helm at %s: run make helm (hack/build-helm.sh) or set PODTRACE_HELM", p)
	}
	return p
}

// helm runs helm with args, with a home of the test's own (no user
// configuration, no repository cache).
func helm(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(helmPath(t), args...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home+"/config", "HELM_CACHE_HOME="+home+"/cache", "HELM_DATA_HOME="+home+"/data")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// render is helm template of the chart, released as podtrace in namespace
// podtrace, with set's values.
func render(t *testing.T, set ...string) []*unstructured.Unstructured {
	t.Helper()
	args := []string{"template", "podtrace", chart, "--namespace", "podtrace"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, errOut, err := helm(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	var objs []*unstructured.Unstructured
	for _, doc := range strings.Split(out, "\n---") {
		if strings.TrimSpace(strings.TrimPrefix(doc, "---")) == "" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("helm template: %v\n%s", err, doc)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	return objs
}

// TestHelmChart renders the chart with helm and holds it to the kustomize
// manifests: the same RBAC (with and without Secrets), the same pod and
// container security context, arguments, resources, probes and volume.
func TestHelmChart(t *testing.T) {
	if out, errOut, err := helm(t, "lint", "--strict", chart); err != nil {
		t.Fatalf("helm lint --strict: %v\n%s%s", err, out, errOut)
	}
	objs := render(t)
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetKind())
		if o.GetKind() != "ClusterRole" && o.GetKind() != "ClusterRoleBinding" && o.GetNamespace() != "" && o.GetNamespace() != "podtrace" {
			t.Errorf("%s %s in namespace %q", o.GetKind(), o.GetName(), o.GetNamespace())
		}
	}
	sort.Strings(kinds)
	if want := []string{"ClusterRole", "ClusterRoleBinding", "Deployment", "PersistentVolumeClaim", "ServiceAccount"}; !slices.Equal(kinds, want) {
		t.Errorf("kinds rendered = %v, want %v (the release's namespace is Helm's: --create-namespace)", kinds, want)
	}
	base := build(t, "")

	var role rbacv1.ClusterRole
	find(t, objs, "ClusterRole", &role)
	if got, want := grants(role.Rules), wantGrants(true); !slices.Equal(got, want) {
		t.Errorf("ClusterRole grants\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var noSecrets rbacv1.ClusterRole
	find(t, render(t, "rbac.secrets=false"), "ClusterRole", &noSecrets)
	if got, want := grants(noSecrets.Rules), wantGrants(false); !slices.Equal(got, want) {
		t.Errorf("rbac.secrets=false: ClusterRole grants\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var binding, baseBinding rbacv1.ClusterRoleBinding
	find(t, objs, "ClusterRoleBinding", &binding)
	find(t, base, "ClusterRoleBinding", &baseBinding)
	if !reflect.DeepEqual(binding.Subjects, baseBinding.Subjects) || !reflect.DeepEqual(binding.RoleRef, baseBinding.RoleRef) {
		t.Errorf("ClusterRoleBinding %+v %+v, want as the manifests' %+v %+v", binding.RoleRef, binding.Subjects, baseBinding.RoleRef, baseBinding.Subjects)
	}

	var d, bd appsv1.Deployment
	find(t, objs, "Deployment", &d)
	find(t, base, "Deployment", &bd)
	var claim, baseClaim corev1.PersistentVolumeClaim
	find(t, objs, "PersistentVolumeClaim", &claim)
	find(t, base, "PersistentVolumeClaim", &baseClaim)
	spec, bspec := d.Spec.Template.Spec, bd.Spec.Template.Spec
	c, bc := spec.Containers[0], bspec.Containers[0]
	for _, check := range []struct {
		what      string
		got, want any
	}{
		{"replicas", d.Spec.Replicas, bd.Spec.Replicas},
		{"strategy", d.Spec.Strategy, bd.Spec.Strategy},
		{"pod security context", spec.SecurityContext, bspec.SecurityContext},
		{"container security context", c.SecurityContext, bc.SecurityContext},
		{"service account", spec.ServiceAccountName, bspec.ServiceAccountName},
		{"grace period", spec.TerminationGracePeriodSeconds, bspec.TerminationGracePeriodSeconds},
		{"image", c.Image, bc.Image},
		{"arguments", c.Args, bc.Args},
		{"environment", c.Env, bc.Env},
		{"ports", c.Ports, bc.Ports},
		{"resources", c.Resources, bc.Resources},
		{"startup probe", c.StartupProbe, bc.StartupProbe},
		{"liveness probe", c.LivenessProbe, bc.LivenessProbe},
		{"readiness probe", c.ReadinessProbe, bc.ReadinessProbe},
		{"volume mounts", c.VolumeMounts, bc.VolumeMounts},
		{"volumes", spec.Volumes, bspec.Volumes},
		{"annotations", d.Spec.Template.Annotations, bd.Spec.Template.Annotations},
		{"claim", claim.Spec, baseClaim.Spec},
	} {
		if !reflect.DeepEqual(check.got, check.want) {
			t.Errorf("Deployment's %s:\n  chart:     %+v\n  manifests: %+v", check.what, check.got, check.want)
		}
	}
}

// TestHelmOnTheControlPlane installs the chart with helm into a namespace
// that enforces the restricted Pod Security standard, records with the
// release's ServiceAccount token (no permission warning), and uninstalls it.
func TestHelmOnTheControlPlane(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the local control plane; skipped with -short")
	}
	helmPath(t)
	c := cluster.New(t, cluster.Options{Nodes: 1})
	warn := &warnings{}
	cfg := c.RESTConfig()
	cfg.WarningHandler = warn
	dyn := dynamic.NewForConfigOrDie(cfg)
	client := kubernetes.NewForConfigOrDie(rest.CopyConfig(c.RESTConfig()))
	ctx := context.Background()

	// The manifests' restricted namespace, where the release goes.
	var ns []*unstructured.Unstructured
	for _, o := range build(t, "") {
		if o.GetKind() == "Namespace" {
			ns = append(ns, o)
		}
	}
	apply(t, dyn, warn, ns)

	out, errOut, err := helm(t, "install", "podtrace", chart, "--namespace", "podtrace", "--kubeconfig", c.Kubeconfig)
	if err != nil {
		t.Fatalf("helm install: %v\n%s%s", err, out, errOut)
	}
	if strings.Contains(out+errOut, "PodSecurity") || strings.Contains(strings.ToLower(errOut), "warning") {
		t.Errorf("helm install warned:\n%s%s", out, errOut)
	}
	t.Logf("helm install:\n%s", out)

	kubeconfig := tokenKubeconfig(t, c, client, "podtrace")
	baseline := rulesOf(t, tokenKubeconfig(t, c, client, "default"), "default")
	checkGrants(t, "chart", rulesOf(t, kubeconfig, "default"), wantGrants(true), baseline)
	stderr := record(t, kubeconfig, client, "sa-chart")
	if w := warningLines(stderr); len(w) > 0 {
		t.Errorf("record with the chart's ServiceAccount warned:\n%s", strings.Join(w, "\n"))
	}

	// The release's pod passed Pod Security admission (restricted).
	var pods *corev1.PodList
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		pods, err = client.CoreV1().Pods("podtrace").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=podtrace"})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) > 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(pods.Items) != 1 {
		t.Errorf("the release's pods: %d, want 1 admitted in the restricted namespace", len(pods.Items))
	}

	if out, errOut, err := helm(t, "uninstall", "podtrace", "--namespace", "podtrace", "--kubeconfig", c.Kubeconfig); err != nil {
		t.Fatalf("helm uninstall: %v\n%s%s", err, out, errOut)
	}
	if _, err := client.RbacV1().ClusterRoles().Get(ctx, "podtrace", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRole podtrace after helm uninstall: %v, want it gone", err)
	}
}
