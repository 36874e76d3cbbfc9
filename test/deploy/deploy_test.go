package deploy

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/podtrace/podtrace/cmd/podtrace/app"
	"github.com/podtrace/podtrace/test/cluster"
)

// build runs kustomize on dir (relative to the repository's deploy/) and
// returns its objects.
func build(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join("..", "..", "deploy", dir))
	if err != nil {
		t.Fatalf("kustomize build deploy/%s: %v", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range m.Resources() {
		data, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &u.Object); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, u)
	}
	return objs
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind string, into any) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no %s in the build", kind)
}

// recorded lists the resources record watches (tracer/kind.go), by API group.
var recorded = map[string][]string{
	"":               {"pods", "events", "namespaces", "nodes", "secrets", "configmaps", "services", "persistentvolumeclaims"},
	"apps":           {"replicasets", "deployments", "statefulsets", "daemonsets"},
	"batch":          {"jobs", "cronjobs"},
	"policy":         {"poddisruptionbudgets"},
	"storage.k8s.io": {"storageclasses"},
	"admissionregistration.k8s.io": {"mutatingwebhookconfigurations", "validatingwebhookconfigurations",
		"validatingadmissionpolicies", "validatingadmissionpolicybindings", "mutatingadmissionpolicies", "mutatingadmissionpolicybindings"},
}

// grants flattens rules into "verb group/resource" strings.
func grants(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, v+" "+g+"/"+res)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func wantGrants(secrets bool) []string {
	out := []string{"create authorization.k8s.io/selfsubjectaccessreviews"}
	for g, rs := range recorded {
		for _, r := range rs {
			if r == "secrets" && !secrets {
				continue
			}
			out = append(out, "list "+g+"/"+r, "watch "+g+"/"+r)
		}
	}
	sort.Strings(out)
	return out
}

// TestManifests checks what kustomize builds of deploy/ and
// deploy/no-secrets, without a cluster.
func TestManifests(t *testing.T) {
	base := build(t, "")
	var kinds []string
	for _, o := range base {
		kinds = append(kinds, o.GetKind())
		if o.GetKind() != "Namespace" && o.GetKind() != "ClusterRole" && o.GetKind() != "ClusterRoleBinding" && o.GetNamespace() != "podtrace" {
			t.Errorf("%s %s in namespace %q, want podtrace", o.GetKind(), o.GetName(), o.GetNamespace())
		}
	}
	sort.Strings(kinds)
	if want := []string{"ClusterRole", "ClusterRoleBinding", "Deployment", "Namespace", "PersistentVolumeClaim", "ServiceAccount"}; !slices.Equal(kinds, want) {
		t.Errorf("kinds built = %v, want %v", kinds, want)
	}

	var role rbacv1.ClusterRole
	find(t, base, "ClusterRole", &role)
	if got, want := grants(role.Rules), wantGrants(true); !slices.Equal(got, want) {
		t.Errorf("base ClusterRole grants\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var noSecrets rbacv1.ClusterRole
	find(t, build(t, "no-secrets"), "ClusterRole", &noSecrets)
	if got, want := grants(noSecrets.Rules), wantGrants(false); !slices.Equal(got, want) {
		t.Errorf("no-secrets ClusterRole grants\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	var ns corev1.Namespace
	find(t, base, "Namespace", &ns)
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("namespace labels %v: want pod-security.kubernetes.io/enforce=restricted", ns.Labels)
	}

	var d appsv1.Deployment
	find(t, base, "Deployment", &d)
	var claim corev1.PersistentVolumeClaim
	find(t, base, "PersistentVolumeClaim", &claim)
	spec := d.Spec.Template.Spec
	c := spec.Containers[0]
	for _, check := range []struct {
		what string
		ok   bool
	}{
		{"1 replica", d.Spec.Replicas != nil && *d.Spec.Replicas == 1},
		{"strategy Recreate", d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType},
		{"the ServiceAccount", spec.ServiceAccountName == "podtrace"},
		{"runAsNonRoot", spec.SecurityContext.RunAsNonRoot != nil && *spec.SecurityContext.RunAsNonRoot},
		{"seccomp RuntimeDefault", spec.SecurityContext.SeccompProfile != nil && spec.SecurityContext.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault},
		{"allowPrivilegeEscalation false", c.SecurityContext.AllowPrivilegeEscalation != nil && !*c.SecurityContext.AllowPrivilegeEscalation},
		{"readOnlyRootFilesystem", c.SecurityContext.ReadOnlyRootFilesystem != nil && *c.SecurityContext.ReadOnlyRootFilesystem},
		{"capabilities drop ALL", c.SecurityContext.Capabilities != nil && slices.Equal(c.SecurityContext.Capabilities.Drop, []corev1.Capability{"ALL"})},
		{"memory and CPU requests and limits", !c.Resources.Requests.Memory().IsZero() && !c.Resources.Requests.Cpu().IsZero() && !c.Resources.Limits.Memory().IsZero() && !c.Resources.Limits.Cpu().IsZero()},
		{"liveness on /healthz", c.LivenessProbe != nil && c.LivenessProbe.HTTPGet.Path == "/healthz"},
		{"readiness on /readyz", c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet.Path == "/readyz"},
		{"--listen on the probes' port", slices.Contains(c.Args, "--listen=:9090") && c.Ports[0].ContainerPort == 9090},
		{"the trace on the volume", slices.Contains(c.Args, "--db=/data/podtrace.db") && c.VolumeMounts[0].MountPath == "/data"},
		{"a grace period for the final flush and compaction", spec.TerminationGracePeriodSeconds != nil && *spec.TerminationGracePeriodSeconds >= 60},
		{"retention by age", slices.Contains(c.Args, "--retain=7d")},
		{"a size budget and room for the compaction's copy beside it", slices.Contains(c.Args, "--max-size=4GiB") && claim.Spec.Resources.Requests.Storage().Value() >= 2*(4<<30)},
		{"a wait for the lease longer than the old pod's grace period", waitForLease(c.Args) > time.Duration(*spec.TerminationGracePeriodSeconds)*time.Second},
		{"the image set by the kustomization", c.Image == "podtrace:dev"},
	} {
		if !check.ok {
			t.Errorf("Deployment: want %s", check.what)
		}
	}
	// The memory limit holds the 20,000-pod peak (442 MiB, BENCHMARKS.md)
	// and the 256 MiB full-disk backlog; GOMEMLIMIT sits under the limit,
	// above that peak, so that the collector works harder before the
	// kernel kills the pod.
	lim := c.Resources.Limits.Memory().Value()
	if lim < (442+256)<<20 {
		t.Errorf("memory limit %d MiB < 442 MiB peak + 256 MiB backlog", lim>>20)
	}
	var soft int64
	for _, e := range c.Env {
		if e.Name == "GOMEMLIMIT" {
			q, err := apiresource.ParseQuantity(strings.TrimSuffix(e.Value, "B"))
			if err != nil {
				t.Fatalf("GOMEMLIMIT %q: %v", e.Value, err)
			}
			soft = q.Value()
		}
	}
	if soft <= 442<<20 || soft >= lim {
		t.Errorf("GOMEMLIMIT %d MiB, want it between the 442 MiB peak and the %d MiB limit", soft>>20, lim>>20)
	}
}

// waitForLease is the --wait-for-lease of args; 0 if none.
func waitForLease(args []string) time.Duration {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--wait-for-lease="); ok {
			d, _ := time.ParseDuration(v)
			return d
		}
	}
	return 0
}

// warnings collects the API server's warnings.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(code int, _ string, text string) {
	if code == 299 && text != "" {
		w.mu.Lock()
		w.list = append(w.list, text)
		w.mu.Unlock()
	}
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.list
	w.list = nil
	return l
}

// apply server-side-applies objs, first as a dry run, and fails on any
// warning (Pod Security admission warns about a pod template it would deny).
func apply(t *testing.T, dyn dynamic.Interface, warn *warnings, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	for _, dry := range []bool{true, false} {
		for _, o := range objs {
			gvk := o.GroupVersionKind()
			gvr := schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: resource(gvk.Kind)}
			data, err := o.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			opts := metav1.PatchOptions{FieldManager: "podtrace-deploy-test", Force: new(true)}
			if dry {
				opts.DryRun = []string{metav1.DryRunAll}
			}
			var ri dynamic.ResourceInterface = dyn.Resource(gvr)
			if o.GetNamespace() != "" {
				ri = dyn.Resource(gvr).Namespace(o.GetNamespace())
			}
			if _, err := ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, opts); err != nil {
				if dry && o.GetNamespace() != "" && strings.Contains(err.Error(), "not found") {
					continue // a first install: its namespace exists only once applied for real
				}
				t.Fatalf("apply (dry run %v) %s %s: %v", dry, gvk.Kind, o.GetName(), err)
			}
			if w := warn.take(); len(w) > 0 {
				t.Errorf("apply (dry run %v) %s %s: warnings %q", dry, gvk.Kind, o.GetName(), w)
			}
		}
	}
}

func resource(kind string) string {
	switch kind {
	case "PersistentVolumeClaim":
		return "persistentvolumeclaims"
	}
	return strings.ToLower(kind) + "s"
}

// tokenKubeconfig writes a kubeconfig for the podtrace ServiceAccount, with
// a token from the TokenRequest API, beside the admin's CA.
func tokenKubeconfig(t *testing.T, c *cluster.Cluster, client kubernetes.Interface, sa string) string {
	t.Helper()
	// The namespace's "default" ServiceAccount is made by the controller
	// manager after the namespace is: a TokenRequest right after the apply
	// can find none yet (seen once in CI).
	var tr *authenticationv1.TokenRequest
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		tr, err = client.CoreV1().ServiceAccounts("podtrace").CreateToken(context.Background(), sa,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(600))}}, metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("TokenRequest for podtrace/%s: %v", sa, err)
	}
	cfg, err := clientcmd.LoadFromFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for name := range cfg.AuthInfos {
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	}
	path := filepath.Join(t.TempDir(), sa+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// record runs podtrace record with kubeconfig until its lists synced and a
// pod created then is recorded, and returns its stderr.
func record(t *testing.T, kubeconfig string, client kubernetes.Interface, pod string) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "trace.db")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- app.Run(ctx, []string{"podtrace", "record", "--kubeconfig", kubeconfig, "--db", db},
			app.Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &stderr})
	}()
	waitFor(t, "record to sync", 60*time.Second, done, &stderr, func() bool { return strings.Contains(stderr.String(), "initial lists synced") })
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // scheduled and started by kwok, flushed
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("podtrace record: %v\n%s", err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("podtrace record did not stop\n%s", stderr.String())
	}
	var out, errOut bytes.Buffer
	if err := app.Run(context.Background(), []string{"podtrace", "diff", pod, "-n", "default", "--db", db, "--color", "never"},
		app.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}); err != nil {
		t.Fatalf("podtrace diff %s: %v\n%s", pod, err, errOut.String())
	}
	if !strings.Contains(out.String(), pod) {
		t.Errorf("podtrace diff %s does not show the pod:\n%s", pod, out.String())
	}
	return stderr.String()
}

func waitFor(t *testing.T, what string, timeout time.Duration, done chan error, stderr *syncBuffer, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		select {
		case err := <-done:
			t.Fatalf("podtrace record ended before %s: %v\n%s", what, err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s\n%s", what, stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func warningLines(stderr string) []string {
	var out []string
	for line := range strings.Lines(stderr) {
		if strings.Contains(line, "warning") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// rulesOf asks, as the ServiceAccount, what it may do in namespace ns
// (kubectl auth can-i --list) and returns the resource rules beyond those
// every authenticated user has.
func rulesOf(t *testing.T, kubeconfig, ns string) []string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	review, err := client.AuthorizationV1().SelfSubjectRulesReviews().Create(context.Background(),
		&authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rules []rbacv1.PolicyRule
	for _, r := range review.Status.ResourceRules {
		rules = append(rules, rbacv1.PolicyRule{Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources})
	}
	return slices.Compact(grants(rules))
}

// checkGrants fails unless the ServiceAccount may do what want says and
// nothing else beyond what every ServiceAccount may (baseline: the
// cluster's defaults, such as reading ClusterTrustBundles).
func checkGrants(t *testing.T, what string, got, want, baseline []string) {
	t.Helper()
	var missing, extra []string
	for _, g := range want {
		if !slices.Contains(got, g) {
			missing = append(missing, g)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) && !slices.Contains(baseline, g) {
			extra = append(extra, g)
		}
	}
	if len(missing)+len(extra) > 0 {
		t.Errorf("%s: the ServiceAccount lacks %q and may also %q", what, missing, extra)
	}
}

// TestDeployOnTheControlPlane applies the manifests (server-side dry run,
// then for real) into the restricted namespace they create, and records
// with the ServiceAccount's own token: no permission warning with the base,
// exactly the Secrets warning with deploy/no-secrets. The Deployment's pod
// is admitted by Pod Security admission, but cannot run here: kwok has no
// kubelet and the cluster no storage provisioner for the claim.
func TestDeployOnTheControlPlane(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the local control plane; skipped with -short")
	}
	c := cluster.New(t, cluster.Options{Nodes: 1})
	warn := &warnings{}
	cfg := c.RESTConfig()
	cfg.WarningHandler = warn
	dyn := dynamic.NewForConfigOrDie(cfg)
	client := kubernetes.NewForConfigOrDie(rest.CopyConfig(c.RESTConfig()))

	base := build(t, "")
	apply(t, dyn, warn, base)
	kubeconfig := tokenKubeconfig(t, c, client, "podtrace")

	// kubectl auth can-i --list, as the ServiceAccount: what record needs,
	// beside what the namespace's default ServiceAccount (bound to nothing)
	// may do.
	baseline := rulesOf(t, tokenKubeconfig(t, c, client, "default"), "default")
	t.Logf("every ServiceAccount may: %s", strings.Join(baseline, ", "))
	for _, g := range wantGrants(true) {
		if slices.Contains(baseline, g) && g != "create authorization.k8s.io/selfsubjectaccessreviews" {
			t.Fatalf("every ServiceAccount may %s: this cluster cannot tell whether the manifests grant it", g)
		}
	}
	checkGrants(t, "base", rulesOf(t, kubeconfig, "default"), wantGrants(true), baseline)
	stderr := record(t, kubeconfig, client, "sa-base")
	if w := warningLines(stderr); len(w) > 0 {
		t.Errorf("record with the base's ServiceAccount warned:\n%s", strings.Join(w, "\n"))
	}
	t.Logf("base: %s", lastLine(stderr))

	// The Deployment's pod passed Pod Security admission (restricted).
	ctx := context.Background()
	var pods *corev1.PodList
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		pods, err = client.CoreV1().Pods("podtrace").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=podtrace"})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(pods.Items) != 1 {
		evs, _ := client.CoreV1().Events("podtrace").List(ctx, metav1.ListOptions{})
		var msgs []string
		for _, e := range evs.Items {
			msgs = append(msgs, e.Reason+": "+e.Message)
		}
		t.Errorf("the Deployment's pods: %d, want 1 admitted; events:\n%s", len(pods.Items), strings.Join(msgs, "\n"))
	} else {
		t.Logf("pod %s admitted in the restricted namespace, phase %s (no provisioner for its claim, no kubelet)", pods.Items[0].Name, pods.Items[0].Status.Phase)
	}

	// The warnings are looked at: a pod template that restricted denies is
	// warned about (a dry run).
	for _, o := range base {
		if o.GetKind() != "Deployment" {
			continue
		}
		bad := o.DeepCopy()
		cs, _, _ := unstructured.NestedSlice(bad.Object, "spec", "template", "spec", "containers")
		c0 := cs[0].(map[string]any)
		c0["securityContext"].(map[string]any)["allowPrivilegeEscalation"] = true
		if err := unstructured.SetNestedSlice(bad.Object, cs, "spec", "template", "spec", "containers"); err != nil {
			t.Fatal(err)
		}
		data, _ := bad.MarshalJSON()
		_, err := dyn.Resource(appsv1.SchemeGroupVersion.WithResource("deployments")).Namespace("podtrace").Patch(ctx, bad.GetName(), types.ApplyPatchType, data,
			metav1.PatchOptions{FieldManager: "podtrace-deploy-test", Force: new(true), DryRun: []string{metav1.DryRunAll}})
		if w := warn.take(); err != nil || len(w) == 0 || !strings.Contains(strings.Join(w, " "), "allowPrivilegeEscalation") {
			t.Errorf("a Deployment with allowPrivilegeEscalation: true: error %v, warnings %q; want a Pod Security warning", err, w)
		}
	}

	// The overlay: the same objects, the ClusterRole without secrets (this
	// dry run also covers the namespaced objects, the namespace now there).
	apply(t, dyn, warn, build(t, "no-secrets"))
	waitRBAC := time.Now().Add(10 * time.Second)
	for time.Now().Before(waitRBAC) && slices.Contains(rulesOf(t, kubeconfig, "default"), "list /secrets") {
		time.Sleep(100 * time.Millisecond)
	}
	checkGrants(t, "no-secrets", rulesOf(t, kubeconfig, "default"), wantGrants(false), baseline)
	stderr = record(t, kubeconfig, client, "sa-no-secrets")
	w := warningLines(stderr)
	if len(w) != 1 || !strings.Contains(w[0], "cannot list and watch secrets in all namespaces: not recording pod-owned Secrets") {
		t.Errorf("record with no-secrets warned %d times, want once, about Secrets:\n%s", len(w), strings.Join(w, "\n"))
	}
	t.Logf("no-secrets: %s; %s", strings.Join(w, "; "), lastLine(stderr))
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
