// Command demo plays the digester case (examples/digester) on a local
// control plane while `podtrace record` records it, then shows what
// podtrace makes of it: `podtrace explain`, `podtrace diff`, the case's two
// comparisons with `podtrace compare` (the same job in a namespace the
// webhook does not select; deleted with Background propagation) and an
// HTML report.
//
// It is what `make demo` runs:
//
//	go run ./examples/demo -podtrace _output/podtrace -out _output/demo
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/compare"
	"github.com/podtrace/podtrace/examples/digester"
	"github.com/podtrace/podtrace/test/cluster"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "demo: error: %v\n", err)
		os.Exit(1)
	}
}

type options struct {
	podtrace string
	out      string
	stuck    time.Duration
	compare  bool
}

func run() error {
	var o options
	flag.StringVar(&o.podtrace, "podtrace", "_output/podtrace", "the podtrace binary")
	flag.StringVar(&o.out, "out", "_output/demo", "folder for the trace, the report and the logs")
	flag.DurationVar(&o.stuck, "stuck", 30*time.Second, "how long to record after the deletion request")
	flag.BoolVar(&o.compare, "compare", true, "also play the two comparisons: the job in a namespace without the label, and deleted with Background propagation")
	flag.Parse()
	if _, err := os.Stat(o.podtrace); err != nil {
		return fmt.Errorf("podtrace binary %s: %w (run make build)", o.podtrace, err)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	step("starting the local control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok)")
	c, err := cluster.Start(ctx, cluster.Options{Nodes: 1, NoSignalHandler: true, AuditPolicy: cluster.PodAuditPolicy})
	if err != nil {
		return err
	}
	defer c.Stop()
	fmt.Printf("   ready in %s; kubeconfig %s\n", c.Ready.Round(time.Millisecond), c.Kubeconfig)
	client := c.Client()

	step("starting the digester webhook and registering it for pod CREATE and UPDATE in namespaces labelled digest-resolution=enabled")
	srv, err := digester.NewServer(digester.ServerOptions{Client: client})
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return err
	}
	defer srv.Close()
	if _, err := digester.Register(ctx, client, digester.Options{URL: srv.URL(), CABundle: srv.CABundle()}); err != nil {
		return err
	}
	const ns, off = "ci", "ci-off"
	if _, err := digester.EnsureNamespace(ctx, client, ns, true); err != nil {
		return err
	}
	if o.compare {
		// The same job where the webhook does not apply: a namespace
		// without its label.
		if _, err := digester.EnsureNamespace(ctx, client, off, false); err != nil {
			return err
		}
	}
	time.Sleep(2 * time.Second) // the API server picks the webhook configuration up within a second or so

	trace := filepath.Join(o.out, "podtrace.db")
	os.Remove(trace)
	step("podtrace record --db " + trace)
	rec, err := startRecorder(o, c.Kubeconfig, trace)
	if err != nil {
		return err
	}
	defer rec.Process.Kill() // only if something below failed: the normal path stops it with SIGINT
	time.Sleep(3 * time.Second)

	const job = "runner-job-1"
	step("the CI runner starts job " + job + ": pull Secret, pod, ownerReferences, ConfigMap, Service")
	pod, err := digester.RunJob(ctx, client, digester.JobOptions{Namespace: ns, Name: job})
	if err != nil {
		return err
	}
	fmt.Printf("   stored images: %s, %s (the runner sent tags)\n", pod.Spec.Containers[0].Image, pod.Spec.Containers[1].Image)
	if err := waitPod(ctx, client, ns, job, "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded }); err != nil {
		return err
	}
	step("the job is done: the runner deletes the pod with propagationPolicy Foreground")
	if err := digester.DeleteJob(ctx, client, pod, metav1.DeletePropagationForeground); err != nil {
		return err
	}
	waitUntil := time.Now().Add(o.stuck)
	if o.compare {
		step("the seed's two comparisons: the same job in " + off + " (no digest-resolution label), and " + ns + "/runner-job-2 deleted with propagationPolicy Background")
		for _, c := range []struct {
			ns, name string
			prop     metav1.DeletionPropagation
		}{{off, job, metav1.DeletePropagationForeground}, {ns, "runner-job-2", metav1.DeletePropagationBackground}} {
			p, err := digester.RunJob(ctx, client, digester.JobOptions{Namespace: c.ns, Name: c.name})
			if err != nil {
				return err
			}
			if err := waitPod(ctx, client, c.ns, c.name, "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded }); err != nil {
				return err
			}
			if err := digester.DeleteJob(ctx, client, p, c.prop); err != nil {
				return err
			}
			fmt.Printf("   deleted %s/%s with propagationPolicy %s\n", c.ns, c.name, c.prop)
		}
	}
	fmt.Printf("   waiting until %s after the deletion request: the pods should be gone within seconds...\n", o.stuck)
	select {
	case <-time.After(time.Until(waitUntil)):
	case <-ctx.Done():
		return ctx.Err()
	}
	if o.compare {
		for _, c := range [][2]string{{off, job}, {ns, "runner-job-2"}} {
			_, err := client.CoreV1().Pods(c[0]).Get(ctx, c[1], metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				fmt.Printf("   %s/%s is gone\n", c[0], c[1])
			case err != nil:
				return err
			default:
				fmt.Printf("   %s/%s is still there (unexpected: its deletion should not be held)\n", c[0], c[1])
			}
		}
	}
	p, err := client.CoreV1().Pods(ns).Get(ctx, job, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		fmt.Println("   the pod is gone (the case did not reproduce)")
	case err != nil:
		return err
	default:
		fmt.Printf("   still there: deletionTimestamp %s, finalizers %v\n", p.DeletionTimestamp.UTC().Format(time.RFC3339), p.Finalizers)
	}

	step("stopping the recorder (Ctrl-C flushes the trace)")
	if err := rec.Process.Signal(os.Interrupt); err != nil {
		return err
	}
	if err := rec.Wait(); err != nil {
		return fmt.Errorf("podtrace record: %w", err)
	}

	step("podtrace import --audit-log " + c.AuditLog + " --db " + trace + " (what the API server refused, which no informer sees)")
	if err := podtrace(o, os.Stdout, "import", "--audit-log", c.AuditLog, "--db", trace); err != nil {
		return err
	}

	step("podtrace explain " + job + " -n " + ns + " --db " + trace)
	if err := podtrace(o, os.Stdout, "explain", job, "-n", ns, "--db", trace); err != nil {
		return err
	}
	step("podtrace diff " + job + " -n " + ns + " --db " + trace)
	if err := podtrace(o, os.Stdout, "diff", job, "-n", ns, "--db", trace); err != nil {
		return err
	}
	if o.compare {
		for _, c := range []struct{ a, b, what string }{
			{off + "/" + job, ns + "/" + job, "the webhook's namespace label off (A) vs on (B), both deleted with Foreground propagation"},
			{ns + "/runner-job-2", ns + "/" + job, "Background (A) vs Foreground (B) propagation, both in the labelled namespace"},
		} {
			step("podtrace compare " + c.a + " " + c.b + " --db " + trace + ": " + c.what)
			if err := compareVerdict(o, trace, c.a, c.b); err != nil {
				return err
			}
		}
	}
	html := filepath.Join(o.out, "report.html")
	step("podtrace report -o html --out " + html)
	if err := podtrace(o, os.Stdout, "report", "--db", trace, "-o", "html", "--out", html); err != nil {
		return err
	}
	if err := podtrace(o, os.Stdout, "report", "--db", trace, "-o", "markdown", "--out", filepath.Join(o.out, "report.md")); err != nil {
		return err
	}
	step("done: open " + html + " in a browser; the trace is " + trace)
	return nil
}

func step(s string) { fmt.Printf("\n==> %s\n", s) }

// compareVerdict runs podtrace compare A B and prints its verdict and its
// decisive differences (the whole comparison is a command away).
func compareVerdict(o options, trace, a, b string) error {
	var out bytes.Buffer
	if err := podtrace(o, &out, "compare", a, b, "--db", trace, "-o", "json"); err != nil {
		return err
	}
	var r compare.Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return fmt.Errorf("podtrace compare %s %s -o json: %w", a, b, err)
	}
	fmt.Printf("   Verdict: %s\n", r.Verdict)
	const shown = 4
	for i, d := range r.Decisive[:min(len(r.Decisive), shown)] {
		fmt.Printf("   %d. %s: A %s; B %s\n", i+1, d.Subject, d.A, d.B)
	}
	if n := len(r.Decisive) - shown; n > 0 {
		fmt.Printf("   and %d more decisive differences\n", n)
	}
	fmt.Printf("   (in full: podtrace compare %s %s --db %s)\n", a, b, trace)
	return nil
}

func startRecorder(o options, kubeconfig, trace string) (*exec.Cmd, error) {
	log, err := os.Create(filepath.Join(o.out, "record.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(o.podtrace, "record", "--kubeconfig", kubeconfig, "--db", trace)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start podtrace record: %w", err)
	}
	return cmd, nil
}

func podtrace(o options, w io.Writer, args ...string) error {
	cmd := exec.Command(o.podtrace, args...)
	cmd.Stdout, cmd.Stderr = w, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("podtrace %v: %w", args, err)
	}
	return nil
}

func waitPod(ctx context.Context, client kubernetes.Interface, ns, name, what string, ok func(*corev1.Pod) bool) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		p, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && ok(p) {
			fmt.Printf("   pod %s/%s %s\n", ns, name, what)
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("pod %s/%s did not become %s", ns, name, what), err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
