package serve

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podtrace/podtrace/store"
)

// query is what a get, list or watch asks for.
type query struct {
	res       resource
	plural    string
	namespace string
	name      string

	labels labels.Selector
	fields fields.Selector

	watch             bool
	resourceVersion   string
	timeout           time.Duration
	sendInitialEvents bool
}

func (q *query) parse(r *http.Request) error {
	v := r.URL.Query()
	var err error
	if q.labels, err = labels.Parse(v.Get("labelSelector")); err != nil {
		return fmt.Errorf("labelSelector: %w", err)
	}
	if q.fields, err = fields.ParseSelector(v.Get("fieldSelector")); err != nil {
		return fmt.Errorf("fieldSelector: %w", err)
	}
	switch v.Get("watch") {
	case "", "0", "false":
	default:
		q.watch = true
	}
	q.resourceVersion = v.Get("resourceVersion")
	if ts := v.Get("timeoutSeconds"); ts != "" {
		n, err := strconv.Atoi(ts)
		if err != nil || n < 0 {
			return fmt.Errorf("timeoutSeconds %q: want a number of seconds", ts)
		}
		q.timeout = time.Duration(n) * time.Second
	}
	q.sendInitialEvents = v.Get("sendInitialEvents") == "true"
	return nil
}

// meta is what selectors and tables read of an object.
type meta struct {
	Metadata struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
	InvolvedObject struct {
		Kind            string `json:"kind"`
		Namespace       string `json:"namespace"`
		Name            string `json:"name"`
		UID             string `json:"uid"`
		APIVersion      string `json:"apiVersion"`
		ResourceVersion string `json:"resourceVersion"`
		FieldPath       string `json:"fieldPath"`
	} `json:"involvedObject"`
	Reason string `json:"reason"`
	Type   string `json:"type"`
	Source struct {
		Component string `json:"component"`
		Host      string `json:"host"`
	} `json:"source"`
	Spec struct {
		NodeName           string `json:"nodeName"`
		RestartPolicy      string `json:"restartPolicy"`
		SchedulerName      string `json:"schedulerName"`
		ServiceAccountName string `json:"serviceAccountName"`
	} `json:"spec"`
	Status struct {
		Phase             string `json:"phase"`
		PodIP             string `json:"podIP"`
		NominatedNodeName string `json:"nominatedNodeName"`
	} `json:"status"`
}

// fieldSet holds the fields the API server lets a field selector name.
func (m *meta) fieldSet(kind string) fields.Set {
	f := fields.Set{"metadata.name": m.Metadata.Name}
	if m.Metadata.Namespace != "" {
		f["metadata.namespace"] = m.Metadata.Namespace
	}
	switch kind {
	case "Event":
		io := m.InvolvedObject
		for k, v := range map[string]string{
			"involvedObject.kind": io.Kind, "involvedObject.namespace": io.Namespace, "involvedObject.name": io.Name,
			"involvedObject.uid": io.UID, "involvedObject.apiVersion": io.APIVersion,
			"involvedObject.resourceVersion": io.ResourceVersion, "involvedObject.fieldPath": io.FieldPath,
			"reason": m.Reason, "type": m.Type, "source": m.Source.Component,
		} {
			f[k] = v
		}
	case "Pod":
		f["spec.nodeName"] = m.Spec.NodeName
		f["spec.restartPolicy"] = m.Spec.RestartPolicy
		f["spec.schedulerName"] = m.Spec.SchedulerName
		f["spec.serviceAccountName"] = m.Spec.ServiceAccountName
		f["status.phase"] = m.Status.Phase
		f["status.podIP"] = m.Status.PodIP
		f["status.nominatedNodeName"] = m.Status.NominatedNodeName
	case "Namespace":
		f["status.phase"] = m.Status.Phase
	}
	return f
}

// filter selects the objects of the query's kind, namespace and name.
func (q *query) filter() store.ObjectFilter {
	return store.ObjectFilter{Kind: q.res.kind, APIVersion: q.res.apiVersion(), Namespace: q.namespace, Name: q.name}
}

// selects reports whether the query has selectors: without them the
// objects' summaries tell namespace and name, and nothing is parsed.
func (q *query) selects() bool { return !q.labels.Empty() || !q.fields.Empty() }

func (q *query) matches(m *meta) bool {
	if q.namespace != "" && m.Metadata.Namespace != q.namespace || q.name != "" && m.Metadata.Name != q.name {
		return false
	}
	return q.labels.Matches(labels.Set(m.Metadata.Labels)) && q.fields.Matches(m.fieldSet(q.res.kind))
}
