package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podtrace/podtrace/cmd/podtrace/app"
	"github.com/podtrace/podtrace/test/cloudexport"
	"github.com/podtrace/podtrace/test/cluster"
)

// cloudAuditFixtures is where TestCloudAuditExports writes its recording
// and the providers' files generated from it when PODTRACE_UPDATE_FIXTURES
// is set: the fixtures of cmd/podtrace/app's TestCloudAuditFixtures.
const cloudAuditFixtures = "../../cmd/podtrace/app/testdata/cloudaudit"

// TestCloudAuditExports records the scenario of test/cloudexport (the
// digester case, a deletion made with impersonation, an eviction refused by
// a budget) with the API server's audit log, writes the log's events in the
// envelopes GKE, EKS and AKS export them in, and checks that importing each
// export gives the evidence the log itself gives: the same requests,
// refusals, patches and findings, except for the fields an export says it
// lacks, which the findings name.
func TestCloudAuditExports(t *testing.T) {
	c, client := newCluster(t, cluster.Options{Nodes: 1, AuditPolicy: cluster.PodAuditPolicy})
	startDigester(t, c, client, "ci")
	createNamespace(t, client, "ops", nil)
	createNamespace(t, client, "web", nil)
	rec := startRecorder(t, c)
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(rec.db); err == nil {
				_ = os.WriteFile(filepath.Join(c.LogDir, "trace.db"), b, 0o644)
			}
		}
	})
	time.Sleep(2 * time.Second) // the API server picks up the webhook configuration

	playStuckJob(t, client, "ci", "runner-job-1", 20*time.Second) // several of the garbage collector's retries
	impersonatedDeletion(t, c, client, "ops", "cache-flush", cloudexport.DefaultScenario.Impersonated)
	refusedEviction(t, client, "web", "web-0")
	time.Sleep(2 * time.Second) // the last changes reach the recording
	rec.stop(t)

	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "local"), 0o755); err != nil {
		t.Fatal(err)
	}
	n := copyAuditLines(t, c.AuditLog, filepath.Join(dir, cloudexport.LocalLog), "ci", "ops", "web")
	t.Logf("%d lines of the audit log about the scenario's namespaces", n)
	trace, err := os.ReadFile(rec.db)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "local", "trace.db"), trace, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cloudexport.WriteFixtures(dir); err != nil {
		t.Fatal(err)
	}
	// Written before the checks: a failure is then read in the fixtures'
	// own test too, without recording again.
	if os.Getenv("PODTRACE_UPDATE_FIXTURES") != "" {
		for _, sub := range append([]string{"local/audit.log", "local/trace.db"}, cloudexport.Exports...) {
			dst := filepath.Join(cloudAuditFixtures, sub)
			if err := os.RemoveAll(dst); err != nil {
				t.Fatal(err)
			}
			src := filepath.Join(dir, sub)
			err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				rel, _ := filepath.Rel(src, p)
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				to := filepath.Join(dst, rel)
				if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
					return err
				}
				return os.WriteFile(to, b, 0o644)
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("fixtures written to %s", cloudAuditFixtures)
	}
	checkCloudExports(t, dir, trace)
}

// checkCloudExports imports the local log and each export into copies of
// the trace and compares their evidence.
func checkCloudExports(t *testing.T, dir string, trace []byte) {
	t.Helper()
	run := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := app.Run(context.Background(), append([]string{"podtrace"}, args...), app.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		if err != nil {
			return "", err
		}
		return out.String(), nil
	}
	load := func(name, log string) map[string]*cloudexport.PodEvidence {
		db := filepath.Join(t.TempDir(), "trace.db")
		if err := os.WriteFile(db, trace, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("podtrace import %s:\n%s", name, podtrace(t, "import", "--audit-log", log, "--db", db))
		ev, err := cloudexport.Collect(db, cloudexport.Pods, run)
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	local := load("local", filepath.Join(dir, cloudexport.LocalLog))
	for _, d := range cloudexport.DefaultScenario.Check(local) {
		t.Errorf("from the API server's log: %s", d)
	}
	for _, exp := range cloudexport.Exports {
		got := load(exp, filepath.Join(dir, exp))
		for _, d := range cloudexport.Compare(local, got) {
			t.Errorf("%s: %s", exp, d)
		}
	}
}

// impersonatedDeletion creates a pod and deletes it with a client that
// impersonates user.
func impersonatedDeletion(t *testing.T, c *cluster.Cluster, client kubernetes.Interface, ns, name, user string) {
	t.Helper()
	createPod(t, client, simplePod(ns, name))
	waitPod(t, client, ns, name, "Ready", podReady)
	cfg := c.RESTConfig()
	cfg.UserAgent = "cache-flusher"
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:masters"}}
	as, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := as.CoreV1().Pods(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pod "+ns+"/"+name+" gone", time.Minute, podGone(client, ns, name))
}

// refusedEviction creates a pod that a PodDisruptionBudget allowing no
// disruption protects, asks twice to evict it (429), then deletes the
// budget and evicts it.
func refusedEviction(t *testing.T, client kubernetes.Interface, ns, name string) {
	t.Helper()
	ctx := t.Context()
	createPod(t, client, simplePod(ns, name))
	waitPod(t, client, ns, name, "Ready", podReady)
	zero := intstr.FromInt32(0)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "keep", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}}
	if _, err := client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the budget observed with no disruption allowed", time.Minute, func() (bool, error) {
		p, err := client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "keep", metav1.GetOptions{})
		return err == nil && p.Status.ObservedGeneration == p.Generation && p.Status.CurrentHealthy == 1 && p.Status.DisruptionsAllowed == 0, err
	})
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	for range 2 {
		if err := client.CoreV1().Pods(ns).EvictV1(ctx, ev); !apierrors.IsTooManyRequests(err) {
			t.Fatalf("eviction against the budget: %v, want 429 TooManyRequests", err)
		}
	}
	if err := client.PolicyV1().PodDisruptionBudgets(ns).Delete(ctx, "keep", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the eviction allowed", time.Minute, func() (bool, error) {
		err := client.CoreV1().Pods(ns).EvictV1(ctx, ev)
		return err == nil, err
	})
	waitFor(t, "pod "+ns+"/"+name+" evicted", time.Minute, podGone(client, ns, name))
}

// copyAuditLines copies the lines of the audit log at src about the
// namespaces to dst, unchanged, and returns how many.
func copyAuditLines(t *testing.T, src, dst string, namespaces ...string) int {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	want := map[string]bool{}
	for _, ns := range namespaces {
		want[ns] = true
	}
	var out bytes.Buffer
	n := 0
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var ev struct {
			ObjectRef *struct{ Namespace, Resource, Name string } `json:"objectRef"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.ObjectRef == nil {
			continue
		}
		if want[ev.ObjectRef.Namespace] || ev.ObjectRef.Resource == "namespaces" && want[ev.ObjectRef.Name] {
			out.Write(sc.Bytes())
			out.WriteByte('\n')
			n++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return n
}
