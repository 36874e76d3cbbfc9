package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// wantsTable reports whether the client asked for a meta.k8s.io Table, as
// kubectl get does.
func wantsTable(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		_, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err == nil && params["as"] == "Table" && params["g"] == "meta.k8s.io" {
			return true
		}
	}
	return false
}

var (
	nameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: "Name of the object"}
	ageColumn  = metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: "Time since creation, at the moment"}
	podColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Ready", Type: "string", Description: "Ready containers of all"},
		{Name: "Status", Type: "string", Description: "The pod's status, as kubectl computes it"},
		{Name: "Restarts", Type: "string", Description: "Container restarts"},
		ageColumn,
		{Name: "IP", Type: "string", Priority: 1},
		{Name: "Node", Type: "string", Priority: 1},
		{Name: "Nominated Node", Type: "string", Priority: 1},
		{Name: "Readiness Gates", Type: "string", Priority: 1},
	}
	eventColumns = []metav1.TableColumnDefinition{
		{Name: "Last Seen", Type: "string"},
		{Name: "Type", Type: "string"},
		{Name: "Reason", Type: "string"},
		{Name: "Object", Type: "string"},
		{Name: "Message", Type: "string"},
		{Name: "Name", Type: "string", Format: "name", Priority: 1},
	}
)

// writeTable writes the selected objects as a Table of the moment t. The
// cells are computed from the recorded objects (names, states, addresses:
// nothing redaction hides); each row's object, its metadata by default, is
// redacted.
func (s *Server) writeTable(w http.ResponseWriter, r *http.Request, t time.Time, q query, st state, red func([]byte) ([]byte, error)) {
	tbl := metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}}
	tbl.ResourceVersion = st.rv
	switch q.res.kind {
	case "Pod":
		tbl.ColumnDefinitions = podColumns
	case "Event":
		tbl.ColumnDefinitions = eventColumns
	default:
		tbl.ColumnDefinitions = []metav1.TableColumnDefinition{nameColumn, ageColumn}
	}
	include := r.URL.Query().Get("includeObject")
	// The rows are independent: they are built on every core, each worker
	// with a redactor of its own.
	tbl.Rows = make([]metav1.TableRow, len(st.items))
	errs := make([]error, len(st.items))
	workers := min(runtime.GOMAXPROCS(0), len(st.items)/64+1)
	var wg sync.WaitGroup
	for k := range workers {
		red := red
		if k > 0 {
			red = s.redactor()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := k; i < len(st.items); i += workers {
				tbl.Rows[i], errs[i] = tableRow(q.res.kind, st.items[i].Object, t, include, red)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error(), nil)
		return
	}
	if tbl.Rows == nil {
		tbl.Rows = []metav1.TableRow{}
	}
	writeJSON(w, tbl)
}

// tableRow is the row of one object at the moment t, with its object as
// include asks (None, Object, or its metadata by default), redacted.
func tableRow(kind string, raw []byte, t time.Time, include string, red func([]byte) ([]byte, error)) (metav1.TableRow, error) {
	cells, md, err := cellsOf(kind, raw, t)
	if err != nil {
		return metav1.TableRow{}, err
	}
	row := metav1.TableRow{Cells: cells}
	switch include {
	case "None":
	case "Object":
		b, err := red(raw)
		if err != nil {
			return row, err
		}
		row.Object = kruntime.RawExtension{Raw: b}
	default:
		// kubectl reads names, namespaces and labels of a row's object,
		// never its managedFields: they are left out.
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(md, &fields); err != nil {
			return row, err
		}
		delete(fields, "managedFields")
		md, _ = json.Marshal(fields)
		b, _ := json.Marshal(struct {
			Kind       string          `json:"kind"`
			APIVersion string          `json:"apiVersion"`
			Metadata   json.RawMessage `json:"metadata"`
		}{"PartialObjectMetadata", "meta.k8s.io/v1", md})
		if b, err = red(b); err != nil {
			return row, err
		}
		row.Object = kruntime.RawExtension{Raw: b}
	}
	return row, nil
}

// since is kubectl's age of a time at the moment t.
func since(ts time.Time, t time.Time) string {
	if ts.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(t.Sub(ts))
}

// cellsOf returns the cells of an object's row at the moment t, and its
// metadata as recorded.
func cellsOf(kind string, raw []byte, t time.Time) ([]any, json.RawMessage, error) {
	var md struct {
		Name              string       `json:"name"`
		CreationTimestamp metav1.Time  `json:"creationTimestamp"`
		DeletionTimestamp *metav1.Time `json:"deletionTimestamp"`
	}
	switch kind {
	case "Pod":
		// What the columns read, not the whole pod: a row costs one parse
		// of the object, and one of its metadata.
		var p struct {
			Metadata json.RawMessage `json:"metadata"`
			Spec     struct {
				Containers     []struct{} `json:"containers"`
				InitContainers []struct {
					Name          string                         `json:"name"`
					RestartPolicy *corev1.ContainerRestartPolicy `json:"restartPolicy"`
				} `json:"initContainers"`
				NodeName       string                    `json:"nodeName"`
				ReadinessGates []corev1.PodReadinessGate `json:"readinessGates"`
			} `json:"spec"`
			Status corev1.PodStatus `json:"status"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, nil, fmt.Errorf("pod: %w", err)
		}
		if err := json.Unmarshal(p.Metadata, &md); err != nil {
			return nil, nil, fmt.Errorf("pod metadata: %w", err)
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: md.Name, CreationTimestamp: md.CreationTimestamp, DeletionTimestamp: md.DeletionTimestamp},
			Spec:       corev1.PodSpec{Containers: make([]corev1.Container, len(p.Spec.Containers)), NodeName: p.Spec.NodeName, ReadinessGates: p.Spec.ReadinessGates},
			Status:     p.Status,
		}
		for _, c := range p.Spec.InitContainers {
			pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: c.Name, RestartPolicy: c.RestartPolicy})
		}
		return podCells(pod, t), p.Metadata, nil
	case "Event":
		var e corev1.Event
		var m struct {
			Metadata json.RawMessage `json:"metadata"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, nil, fmt.Errorf("event: %w", err)
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, nil, fmt.Errorf("event: %w", err)
		}
		last := e.LastTimestamp.Time
		if last.IsZero() {
			last = e.EventTime.Time
		}
		if last.IsZero() {
			last = e.CreationTimestamp.Time
		}
		obj := strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name
		return []any{since(last, t), e.Type, e.Reason, obj, strings.TrimSpace(e.Message), e.Name}, m.Metadata, nil
	}
	var m struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, nil, err
	}
	if err := json.Unmarshal(m.Metadata, &md); err != nil {
		return nil, nil, err
	}
	return []any{md.Name, since(md.CreationTimestamp.Time, t)}, m.Metadata, nil
}

// podCells are kubectl's columns of a pod (printPod in
// k8s.io/kubernetes/pkg/printers/internalversion), at the moment t.
func podCells(pod *corev1.Pod, t time.Time) []any {
	restarts, restartableInit := 0, 0
	var lastRestart time.Time
	total := len(pod.Spec.Containers)
	ready := 0
	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	sidecar := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecar[c.Name] = true
			total++
		}
	}
	noteRestart := func(cs corev1.ContainerStatus) {
		if term := cs.LastTerminationState.Terminated; term != nil && term.FinishedAt.Time.After(lastRestart) {
			lastRestart = term.FinishedAt.Time
		}
	}
	initializing := false
	for i, c := range pod.Status.InitContainerStatuses {
		restarts += int(c.RestartCount)
		noteRestart(c)
		if sidecar[c.Name] {
			restartableInit += int(c.RestartCount)
		}
		switch {
		case c.State.Terminated != nil && c.State.Terminated.ExitCode == 0:
			continue
		case sidecar[c.Name] && c.Started != nil && *c.Started:
			if c.Ready {
				ready++
			}
			continue
		case c.State.Terminated != nil:
			switch {
			case c.State.Terminated.Reason != "":
				reason = "Init:" + c.State.Terminated.Reason
			case c.State.Terminated.Signal != 0:
				reason = fmt.Sprintf("Init:Signal:%d", c.State.Terminated.Signal)
			default:
				reason = fmt.Sprintf("Init:ExitCode:%d", c.State.Terminated.ExitCode)
			}
		case c.State.Waiting != nil && c.State.Waiting.Reason != "" && c.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + c.State.Waiting.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		initializing = true
		break
	}
	if !initializing || podInitialized(pod) {
		restarts = restartableInit
		running := false
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			c := pod.Status.ContainerStatuses[i]
			restarts += int(c.RestartCount)
			noteRestart(c)
			switch {
			case c.State.Waiting != nil && c.State.Waiting.Reason != "":
				reason = c.State.Waiting.Reason
			case c.State.Terminated != nil && c.State.Terminated.Reason != "":
				reason = c.State.Terminated.Reason
			case c.State.Terminated != nil && c.State.Terminated.Signal != 0:
				reason = fmt.Sprintf("Signal:%d", c.State.Terminated.Signal)
			case c.State.Terminated != nil:
				reason = fmt.Sprintf("ExitCode:%d", c.State.Terminated.ExitCode)
			case c.Ready && c.State.Running != nil:
				running = true
				ready++
			}
		}
		if reason == "Completed" && running {
			reason = "NotReady"
			if podReady(pod) {
				reason = "Running"
			}
		}
	}
	if pod.DeletionTimestamp != nil {
		switch {
		case pod.Status.Reason == "NodeLost":
			reason = "Unknown"
		case pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed:
			reason = "Terminating"
		}
	}
	restartsText := fmt.Sprint(restarts)
	if restarts != 0 && !lastRestart.IsZero() {
		restartsText = fmt.Sprintf("%d (%s ago)", restarts, since(lastRestart, t))
	}
	gates := "<none>"
	if n := len(pod.Spec.ReadinessGates); n > 0 {
		trueGates := 0
		for _, g := range pod.Spec.ReadinessGates {
			for _, c := range pod.Status.Conditions {
				if c.Type == g.ConditionType && c.Status == corev1.ConditionTrue {
					trueGates++
				}
			}
		}
		gates = fmt.Sprintf("%d/%d", trueGates, n)
	}
	return []any{
		pod.Name, fmt.Sprintf("%d/%d", ready, total), reason, restartsText, since(pod.CreationTimestamp.Time, t),
		orNone(pod.Status.PodIP), orNone(pod.Spec.NodeName), orNone(pod.Status.NominatedNodeName), gates,
	}
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func podInitialized(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodInitialized && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
