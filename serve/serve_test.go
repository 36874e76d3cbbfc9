package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/podtrace/podtrace/internal/tracetest"
	"github.com/podtrace/podtrace/redact"
	"github.com/podtrace/podtrace/store"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// podRev is one revision of the test pod: what changed, when it was seen.
type podRev struct {
	at  time.Duration
	typ store.EventType
	mod func(p *corev1.Pod)
}

// trace writes a small trace: a pod created, scheduled, running, asked to
// be deleted, deleted; an event about it; a ReplicaSet. It returns the
// open trace and the pod's records.
func trace(t *testing.T) (*store.DB, []store.Record) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.db")
	db, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.BeginSession(store.Session{Server: "https://127.0.0.1:6443", ServerVersion: "v1.37.2", Started: t0})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ci", UID: "pod-uid-1", Labels: map[string]string{"app": "web"}, CreationTimestamp: metav1.NewTime(t0.Add(10 * time.Second))},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx", Env: []corev1.EnvVar{{Name: "PASSWORD", Value: "hunter2"}}}}},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
	revs := []podRev{
		{10 * time.Second, store.Added, func(p *corev1.Pod) {}},
		{11 * time.Second, store.Updated, func(p *corev1.Pod) { p.Spec.NodeName = "node-1" }},
		{20 * time.Second, store.Updated, func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.PodIP = "10.0.0.7"
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}},
		{60 * time.Second, store.Updated, func(p *corev1.Pod) {
			ts := metav1.NewTime(t0.Add(60 * time.Second))
			p.DeletionTimestamp = &ts
			p.Finalizers = []string{"foregroundDeletion"}
		}},
		{90 * time.Second, store.Deleted, func(p *corev1.Pod) {}},
	}
	var recs []store.Record
	for i, r := range revs {
		r.mod(pod)
		pod.ResourceVersion = strconv.Itoa(100 + i*10)
		b, _ := json.Marshal(pod)
		recs = append(recs, store.Record{Session: s.ID, Observed: t0.Add(r.at), Type: r.typ, APIVersion: "v1", Kind: "Pod",
			Namespace: "ci", Name: "web", UID: "pod-uid-1", ResourceVersion: pod.ResourceVersion, Object: b})
	}
	ev := fmt.Sprintf(`{"kind":"Event","apiVersion":"v1","metadata":{"name":"web.1","namespace":"ci","uid":"ev-uid-1","resourceVersion":"105","creationTimestamp":"%s"},"involvedObject":{"kind":"Pod","namespace":"ci","name":"web","uid":"pod-uid-1","apiVersion":"v1"},"reason":"Scheduled","message":"assigned ci/web to node-1","type":"Normal","lastTimestamp":"%s"}`,
		t0.Add(11*time.Second).Format(time.RFC3339), t0.Add(11*time.Second).Format(time.RFC3339))
	other := `{"kind":"Event","apiVersion":"v1","metadata":{"name":"other.1","namespace":"ci","uid":"ev-uid-2","resourceVersion":"106"},"involvedObject":{"kind":"Pod","namespace":"ci","name":"other","uid":"pod-uid-2"},"reason":"Scheduled","type":"Normal"}`
	rs := fmt.Sprintf(`{"kind":"ReplicaSet","apiVersion":"apps/v1","metadata":{"name":"web-rs","namespace":"ci","uid":"rs-uid-1","resourceVersion":"50","creationTimestamp":"%s"},"spec":{"replicas":1}}`, t0.Format(time.RFC3339))
	extra := []store.Record{
		{Session: s.ID, Observed: t0.Add(time.Second), Type: store.Initial, APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "ci", Name: "web-rs", UID: "rs-uid-1", ResourceVersion: "50", Object: json.RawMessage(rs)},
		{Session: s.ID, Observed: t0.Add(12 * time.Second), Type: store.Added, APIVersion: "v1", Kind: "Event", Namespace: "ci", Name: "web.1", UID: "ev-uid-1", ResourceVersion: "105", Refs: []string{"pod-uid-1"}, Object: json.RawMessage(ev)},
		{Session: s.ID, Observed: t0.Add(12 * time.Second), Type: store.Added, APIVersion: "v1", Kind: "Event", Namespace: "ci", Name: "other.1", UID: "ev-uid-2", ResourceVersion: "106", Refs: []string{"pod-uid-2"}, Object: json.RawMessage(other)},
	}
	all := append([]store.Record{extra[0], recs[0], recs[1]}, extra[1], extra[2])
	all = append(all, recs[2:]...)
	if err := db.Write(all); err != nil {
		t.Fatal(err)
	}
	if err := db.EndSession(s.ID, t0.Add(120*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	h, err := db.History("pod-uid-1")
	if err != nil {
		t.Fatal(err)
	}
	return db, h
}

func newServer(t *testing.T, db *store.DB, redacted bool) *httptest.Server {
	t.Helper()
	opts := Options{Speed: 0}
	if redacted {
		red, err := redact.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		opts.Redactor = red
	}
	srv, err := New(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts
}

func get(t *testing.T, url, accept string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func at(d time.Duration) string { return Path(t0.Add(d)) }

func TestListAtMoments(t *testing.T) {
	db, _ := trace(t)
	ts := newServer(t, db, true)
	for _, tc := range []struct {
		at    string
		names []string
		rv    string
	}{
		{at(5 * time.Second), nil, ""},
		{at(30 * time.Second), []string{"web"}, "120"},
		{at(70 * time.Second), []string{"web"}, "130"},
		{at(100 * time.Second), nil, "140"},
		{"/latest/", nil, "140"},
		{"/at/-40s/", []string{"web"}, "130"},
	} {
		t.Run(tc.at, func(t *testing.T) {
			code, b := get(t, ts.URL+tc.at+"api/v1/pods", "")
			if code != 200 {
				t.Fatalf("GET: %d %s", code, b)
			}
			var l corev1.PodList
			if err := json.Unmarshal(b, &l); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range l.Items {
				names = append(names, p.Name)
			}
			if fmt.Sprint(names) != fmt.Sprint(tc.names) || l.ResourceVersion != tc.rv {
				t.Errorf("pods %v at rv %q, want %v at %q", names, l.ResourceVersion, tc.names, tc.rv)
			}
		})
	}
}

func TestGetEachRevision(t *testing.T) {
	db, hist := trace(t)
	ts := newServer(t, db, true)
	red, _ := redact.New(nil)
	for _, rec := range hist[:len(hist)-1] {
		code, b := get(t, ts.URL+Path(rec.Observed)+"api/v1/namespaces/ci/pods/web", "")
		if code != 200 {
			t.Fatalf("GET at %s: %d %s", rec.Observed, code, b)
		}
		want, err := red.Clone().RedactObject(rec.Object)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != string(want) {
			t.Errorf("at %s:\n got %s\nwant %s", rec.Observed, b, want)
		}
		if strings.Contains(string(b), "hunter2") {
			t.Errorf("at %s: the env value is not redacted: %s", rec.Observed, b)
		}
	}
	code, b := get(t, ts.URL+Path(hist[len(hist)-1].Observed)+"api/v1/namespaces/ci/pods/web", "")
	var st metav1.Status
	json.Unmarshal(b, &st)
	if code != 404 || st.Reason != metav1.StatusReasonNotFound {
		t.Errorf("GET after the deletion: %d %s, want a 404 NotFound Status", code, b)
	}
	// --no-redact serves the recorded bytes.
	plain := newServer(t, db, false)
	if _, b := get(t, plain.URL+Path(hist[0].Observed)+"api/v1/namespaces/ci/pods/web", ""); string(b) != string(hist[0].Object) {
		t.Errorf("without redaction:\n got %s\nwant %s", b, hist[0].Object)
	}
}

func TestSelectors(t *testing.T) {
	db, _ := trace(t)
	ts := newServer(t, db, true)
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"api/v1/namespaces/ci/events?fieldSelector=involvedObject.name%3Dweb,involvedObject.namespace%3Dci", []string{"web.1"}},
		{"api/v1/events?fieldSelector=involvedObject.uid%3Dpod-uid-2", []string{"other.1"}},
		{"api/v1/events", []string{"other.1", "web.1"}},
		{"api/v1/pods?labelSelector=app%3Dweb", []string{"web"}},
		{"api/v1/pods?labelSelector=app%3Ddb", nil},
		{"api/v1/pods?fieldSelector=metadata.name%3Dweb", []string{"web"}},
		{"api/v1/namespaces/other/pods", nil},
		{"apis/apps/v1/namespaces/ci/replicasets", []string{"web-rs"}},
	} {
		code, b := get(t, ts.URL+at(30*time.Second)+tc.path, "")
		if code != 200 {
			t.Fatalf("%s: %d %s", tc.path, code, b)
		}
		var l struct {
			Items []metav1.PartialObjectMetadata `json:"items"`
		}
		json.Unmarshal(b, &l)
		var names []string
		for _, it := range l.Items {
			names = append(names, it.Name)
		}
		if fmt.Sprint(names) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %v, want %v", tc.path, names, tc.want)
		}
	}
}

func TestPodTable(t *testing.T) {
	db, _ := trace(t)
	ts := newServer(t, db, true)
	const table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
	for _, tc := range []struct {
		at   time.Duration
		want string
	}{
		{15 * time.Second, "[web 0/1 Pending 0 5s <none> node-1 <none> <none>]"},
		{30 * time.Second, "[web 1/1 Running 0 20s 10.0.0.7 node-1 <none> <none>]"},
		{75 * time.Second, "[web 1/1 Terminating 0 65s 10.0.0.7 node-1 <none> <none>]"},
	} {
		code, b := get(t, ts.URL+at(tc.at)+"api/v1/namespaces/ci/pods", table)
		if code != 200 {
			t.Fatalf("%d %s", code, b)
		}
		var tbl metav1.Table
		if err := json.Unmarshal(b, &tbl); err != nil {
			t.Fatal(err)
		}
		if len(tbl.Rows) != 1 || fmt.Sprint(tbl.Rows[0].Cells) != tc.want {
			t.Errorf("at +%s: rows %v, want %s", tc.at, tbl.Rows, tc.want)
			continue
		}
		var pom metav1.PartialObjectMetadata
		json.Unmarshal(tbl.Rows[0].Object.Raw, &pom)
		if pom.Kind != "PartialObjectMetadata" || pom.Name != "web" || pom.Namespace != "ci" {
			t.Errorf("row object %s, want the pod's PartialObjectMetadata", tbl.Rows[0].Object.Raw)
		}
	}
	code, b := get(t, ts.URL+at(30*time.Second)+"apis/apps/v1/replicasets", table)
	var tbl metav1.Table
	json.Unmarshal(b, &tbl)
	if code != 200 || len(tbl.Rows) != 1 || fmt.Sprint(tbl.Rows[0].Cells) != "[web-rs 1 0 0 30s   <none>]" {
		t.Errorf("replicasets table: %d %s", code, b)
	}
}

func TestDiscovery(t *testing.T) {
	db, _ := trace(t)
	ts := newServer(t, db, true)
	cfg := &rest.Config{Host: ts.URL + at(30*time.Second)}
	cs := kubernetes.NewForConfigOrDie(cfg)
	v, err := cs.Discovery().ServerVersion()
	if err != nil || v.GitVersion != "v1.37.2" || v.Minor != "37" {
		t.Errorf("ServerVersion: %+v, %v", v, err)
	}
	groups, lists, err := cs.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	var gs []string
	for _, g := range groups {
		gs = append(gs, g.Name)
	}
	// Every kind podtrace records, whether the trace holds some or not
	// (kubectl get svc is an empty list, not an unknown resource type).
	if fmt.Sprint(gs) != "[ admissionregistration.k8s.io apps batch storage.k8s.io]" {
		t.Errorf("groups %v, want the core group, admissionregistration.k8s.io, apps, batch and storage.k8s.io", gs)
	}
	var rs []string
	for _, l := range lists {
		for _, r := range l.APIResources {
			rs = append(rs, l.GroupVersion+" "+r.Name+" "+strings.Join(r.Verbs, ","))
		}
	}
	if got := strings.Join(rs, "; "); got != "v1 configmaps get,list,watch; v1 events get,list,watch; v1 namespaces get,list,watch; v1 nodes get,list,watch; "+
		"v1 persistentvolumeclaims get,list,watch; v1 pods get,list,watch; v1 secrets get,list,watch; v1 services get,list,watch; "+
		"admissionregistration.k8s.io/v1 mutatingwebhookconfigurations get,list,watch; admissionregistration.k8s.io/v1 validatingwebhookconfigurations get,list,watch; "+
		"apps/v1 daemonsets get,list,watch; apps/v1 deployments get,list,watch; apps/v1 replicasets get,list,watch; apps/v1 statefulsets get,list,watch; "+
		"batch/v1 cronjobs get,list,watch; batch/v1 jobs get,list,watch; storage.k8s.io/v1 storageclasses get,list,watch" {
		t.Errorf("resources: %s", got)
	}
}

func TestWritesRefused(t *testing.T) {
	db, _ := trace(t)
	ts := newServer(t, db, true)
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		req, _ := http.NewRequest(m, ts.URL+"/latest/api/v1/namespaces/ci/pods/web", strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var st metav1.Status
		json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if resp.StatusCode != 405 || st.Code != 405 || st.Reason != metav1.StatusReasonMethodNotAllowed || !strings.Contains(st.Message, "read-only recording") {
			t.Errorf("%s: %d %+v, want a 405 Status saying read-only recording", m, resp.StatusCode, st)
		}
	}
	cs := kubernetes.NewForConfigOrDie(&rest.Config{Host: ts.URL + "/latest/"})
	err := cs.CoreV1().Pods("ci").Delete(context.Background(), "web", metav1.DeleteOptions{})
	if err == nil || !strings.Contains(err.Error(), "read-only recording") {
		t.Errorf("client-go Delete: %v, want the read-only refusal", err)
	}
}

func TestWatchReplays(t *testing.T) {
	db, hist := trace(t)
	ts := newServer(t, db, true)
	cs := kubernetes.NewForConfigOrDie(&rest.Config{Host: ts.URL + at(5*time.Second)})
	timeout := int64(2)
	w, err := cs.CoreV1().Pods("").Watch(context.Background(), metav1.ListOptions{TimeoutSeconds: &timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var got []string
	for ev := range w.ResultChan() {
		p := ev.Object.(*corev1.Pod)
		got = append(got, string(ev.Type)+" "+p.ResourceVersion)
	}
	var want []string
	for i, r := range hist {
		typ := "MODIFIED"
		switch {
		case i == 0:
			typ = "ADDED"
		case r.Type == store.Deleted:
			typ = "DELETED"
		}
		want = append(want, typ+" "+r.ResourceVersion)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("watch: %v, want %v", got, want)
	}
}

func TestInformer(t *testing.T) {
	db, _ := trace(t)
	ts := newServer(t, db, true)
	cs := kubernetes.NewForConfigOrDie(&rest.Config{Host: ts.URL + at(15*time.Second)})
	f := informers.NewSharedInformerFactory(cs, 0)
	inf := f.Core().V1().Pods().Informer()
	seen := make(chan string, 10)
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { seen <- "add " + o.(*corev1.Pod).ResourceVersion },
		UpdateFunc: func(_, o any) { seen <- "update " + o.(*corev1.Pod).ResourceVersion },
		DeleteFunc: func(o any) { seen <- "delete" },
	})
	stop := make(chan struct{})
	defer close(stop)
	f.Start(stop)
	var got []string
	deadline := time.After(20 * time.Second)
	for len(got) < 4 {
		select {
		case s := <-seen:
			got = append(got, s)
		case <-deadline:
			t.Fatalf("informer saw %v, want 4 events", got)
		}
	}
	if want := "[add 110 update 120 update 130 delete]"; fmt.Sprint(got) != want {
		t.Errorf("informer: %v, want %s", got, want)
	}
}

func TestMoment(t *testing.T) {
	db, _ := trace(t)
	srv, err := New(db, Options{})
	if err != nil {
		t.Fatal(err)
	}
	end := t0.Add(120 * time.Second)
	for _, tc := range []struct {
		in   string
		want time.Time
		err  bool
	}{
		{"latest", end, false},
		{"2026-12-01T10:00:30Z", t0.Add(30 * time.Second), false},
		{"2026-12-01T11:00:30+01:00", t0.Add(30 * time.Second), false},
		{"-5m", end.Add(-5 * time.Minute), false},
		{"10:01", t0.Add(time.Minute), false},
		{"10:00:30.5", t0.Add(30*time.Second + 500*time.Millisecond), false},
		{"23:00", time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC), false}, // later than the end: the day before
		{"5m", time.Time{}, true},
		{"yesterday", time.Time{}, true},
	} {
		got, err := srv.Moment(tc.in)
		if (err != nil) != tc.err || !got.Equal(tc.want) {
			t.Errorf("Moment(%q) = %s, %v; want %s (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	code, b := get(t, ts.URL+"/api/v1/pods", "")
	if code != 404 || !strings.Contains(string(b), "pick a moment") {
		t.Errorf("a path without a moment: %d %s, want a 404 that says how to pick one", code, b)
	}
}

// TestWatchResumes: a watch from a resourceVersion after the moment (an
// informer's next watch) sends only what followed it, and knows what was
// added before it.
func TestWatchResumes(t *testing.T) {
	db, hist := trace(t)
	ts := newServer(t, db, true)
	cs := kubernetes.NewForConfigOrDie(&rest.Config{Host: ts.URL + at(5*time.Second)})
	timeout := int64(1)
	w, err := cs.CoreV1().Pods("ci").Watch(context.Background(), metav1.ListOptions{ResourceVersion: hist[2].ResourceVersion, TimeoutSeconds: &timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var got []string
	for ev := range w.ResultChan() {
		got = append(got, string(ev.Type)+" "+ev.Object.(*corev1.Pod).ResourceVersion)
	}
	want := []string{"MODIFIED " + hist[3].ResourceVersion, "DELETED " + hist[4].ResourceVersion}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("resumed watch: %v, want %v", got, want)
	}
}

// TestWarnsAtAPrunedMoment: at a moment before the last deletion that
// retention pruned, every answer carries a 299 warning (kubectl prints
// it) that pods may be missing; after it, none.
func TestWarnsAtAPrunedMoment(t *testing.T) {
	path, gone := tracetest.PrunedTrace(t, t.TempDir())
	db, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ts := newServer(t, db, true)
	warning := func(at time.Time) string {
		resp, err := http.Get(ts.URL + Path(at) + "api/v1/pods")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d at %s", resp.StatusCode, at)
		}
		return resp.Header.Get("Warning")
	}
	if w := warning(gone.Add(-30 * time.Minute)); !strings.HasPrefix(w, `299 - "podtrace: retention pruned the history of pods gone up to `) {
		t.Errorf("warning before the pruned deletions %q, want retention's", w)
	}
	if w := warning(gone.Add(time.Hour)); w != "" {
		t.Errorf("warning after the pruned deletions %q, want none", w)
	}
}

// TestWatchTable: kubectl get -w asks for Tables: each event is a Table of
// one row, the columns in the first alone, the row's cells at the moment
// the revision was recorded (its age then, its status changes).
func TestWatchTable(t *testing.T) {
	db, _ := trace(t)
	ts := newServer(t, db, true)
	code, b := get(t, ts.URL+at(5*time.Second)+"api/v1/namespaces/ci/pods?watch=true&timeoutSeconds=1",
		"application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
	if code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	var got []string
	dec := json.NewDecoder(bytes.NewReader(b))
	for i := 0; ; i++ {
		var ev struct {
			Type   string
			Object metav1.Table
		}
		if err := dec.Decode(&ev); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if (i == 0) != (len(ev.Object.ColumnDefinitions) > 0) {
			t.Errorf("event %d: %d column definitions, want them in the first event alone", i, len(ev.Object.ColumnDefinitions))
		}
		if ev.Object.Kind != "Table" || len(ev.Object.Rows) != 1 {
			t.Fatalf("event %d: %+v, want a Table of one row", i, ev.Object)
		}
		got = append(got, ev.Type+" "+fmt.Sprint(ev.Object.Rows[0].Cells[:5]))
	}
	want := []string{
		"ADDED [web 0/1 Pending 0 0s]",
		"MODIFIED [web 0/1 Pending 0 1s]",
		"MODIFIED [web 1/1 Running 0 10s]",
		"MODIFIED [web 1/1 Terminating 0 50s]",
		"DELETED [web 1/1 Terminating 0 80s]",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("watch as Tables (-want +got):\n%s", diff)
	}
}
