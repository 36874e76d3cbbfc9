// Package cloudexport writes the audit events of a kube-apiserver audit log
// as GKE, EKS and AKS export them. It generates the fixtures of podtrace
// import's provider formats from real events of the local control plane
// (test/e2e records them), so that each fixture is a documented envelope
// around events an API server wrote, and can be regenerated:
//
//	go run ./test/cloudexport/cmd/fixtures -dir cmd/podtrace/app/testdata/cloudaudit
//
// The envelopes follow the documents cited in tracer/auditlog's gke.go,
// eks.go and aks.go; each fixture directory's README says which of the
// envelope's own fields (project, stream and resource names, ingestion
// times, event IDs) are placeholders, and which mappings are not documented
// by the provider.
package cloudexport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Event is one audit event of a kube-apiserver log: the line as written,
// and the fields the envelopes use.
type Event struct {
	Line                     json.RawMessage
	AuditID                  string `json:"auditID"`
	Level                    string `json:"level"`
	Stage                    string `json:"stage"`
	RequestURI               string `json:"requestURI"`
	Verb                     string `json:"verb"`
	User                     *user  `json:"user"`
	ImpersonatedUser         *user  `json:"impersonatedUser"`
	SourceIPs                []string
	UserAgent                string     `json:"userAgent"`
	ObjectRef                *objectRef `json:"objectRef"`
	ResponseStatus           *status    `json:"responseStatus"`
	RequestObject            json.RawMessage
	ResponseObject           json.RawMessage
	RequestReceivedTimestamp time.Time
	StageTimestamp           time.Time
	Annotations              map[string]string `json:"annotations"`
}

type user struct {
	Username string `json:"username"`
}

type objectRef struct {
	Resource    string `json:"resource"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	APIGroup    string `json:"apiGroup"`
	APIVersion  string `json:"apiVersion"`
	Subresource string `json:"subresource"`
}

type status struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Reason  string `json:"reason"`
}

// Read reads the audit events of a kube-apiserver log (JSON lines). Lines
// that are not audit.k8s.io/v1 Events are errors: the generator's input is
// a real log.
func Read(r io.Reader) ([]Event, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	var out []Event
	for n := 1; sc.Scan(); n++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var ev struct {
			Event
			Kind, APIVersion         string
			SourceIPs                []string        `json:"sourceIPs"`
			RequestObject            json.RawMessage `json:"requestObject"`
			ResponseObject           json.RawMessage `json:"responseObject"`
			RequestReceivedTimestamp time.Time       `json:"requestReceivedTimestamp"`
			StageTimestamp           time.Time       `json:"stageTimestamp"`
		}
		if err := json.Unmarshal(b, &ev); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if ev.Kind != "Event" || ev.APIVersion != "audit.k8s.io/v1" {
			return nil, fmt.Errorf("line %d: apiVersion %q kind %q, not an audit.k8s.io/v1 Event", n, ev.APIVersion, ev.Kind)
		}
		e := ev.Event
		e.Line = bytes.Clone(b)
		e.SourceIPs, e.RequestObject, e.ResponseObject = ev.SourceIPs, ev.RequestObject, ev.ResponseObject
		e.RequestReceivedTimestamp, e.StageTimestamp = ev.RequestReceivedTimestamp, ev.StageTimestamp
		out = append(out, e)
	}
	return out, sc.Err()
}

// micro is kube-apiserver's format of times, which GKE's timestamps share.
const micro = "2006-01-02T15:04:05.000000Z07:00"

// indent writes v as the providers' command-line tools print it.
func indent(w io.Writer, v any, prefix string) error {
	b, err := json.MarshalIndent(v, "", prefix)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// lines writes each value on a line of its own.
func lines[T any](w io.Writer, vs []T) error {
	for _, v := range vs {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b = append(b, '\n')
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// fnv is a stable 64-bit hash of s, for placeholder IDs.
func fnv(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
