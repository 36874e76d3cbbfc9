package diff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/store"
)

// Audit is what the API server's audit log says about a pod: who made each
// request, what each mutating webhook patched, and the requests it refused,
// which no informer sees.
type Audit struct {
	// Requests are the successful writes of the pod, oldest first, each
	// linked to the revision it produced when the trace holds it.
	Requests []AuditRequest `json:"requests,omitempty"`
	// Denied groups the refused requests by who asked, what and why.
	Denied []DeniedRequests `json:"denied,omitempty"`
	// Patches are the mutating webhooks' JSONPatches, as the API server
	// recorded them in patch.webhook.admission.k8s.io annotations.
	Patches []WebhookPatch `json:"patches,omitempty"`
	// PolicyFailures are the admission policies' failed validations.
	PolicyFailures []PolicyFailures `json:"policyFailures,omitempty"`
	// Configurations names each mutating webhook's configuration, by
	// webhook, as the audit annotations give it (for a webhook the trace did
	// not record).
	Configurations map[string]string `json:"-"`
	// Sources are the exports that built some of the events, and what
	// they did not carry (auditexport.go).
	Sources []AuditSource `json:"sources,omitempty"`
}

// AuditRequest is one successful request about the pod.
type AuditRequest struct {
	// Time is when the response completed (stageTimestamp); Received
	// when the API server received the request.
	Time        time.Time `json:"time"`
	Received    time.Time `json:"received,omitzero"`
	AuditID     string    `json:"auditID"`
	Verb        string    `json:"verb"`
	Subresource string    `json:"subresource,omitempty"`
	// User is who made the request; ImpersonatedUser, when set, the
	// identity it was made and authorized as (kubectl --as, a proxy).
	User             string `json:"user"`
	ImpersonatedUser string `json:"impersonatedUser,omitempty"`
	UserAgent        string `json:"userAgent,omitempty"`
	Code             int    `json:"code"`
	// ResourceVersion of the object as stored; Seq is the recorded revision
	// with that resourceVersion, 0 if none.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	Seq             uint64 `json:"seq,omitempty"`
	// Listed is, for a deletecollection, the pod's resourceVersion when
	// the request listed it, before deleting it: its response lists the
	// pods as they were (genericregistry.Store.DeleteCollection).
	Listed string `json:"listedResourceVersion,omitempty"`
	// GracePeriodSeconds is a DELETE's (or deletecollection's), as its
	// DeleteOptions asked, when the audit event holds the request.
	GracePeriodSeconds *int64 `json:"gracePeriodSeconds,omitempty"`
	// Selector is a deletecollection's label and field selectors, from
	// its request URI: which pods of the namespace it deleted.
	Selector string `json:"selector,omitempty"`
	// Lacks are the event fields the export it came from did not carry;
	// ExportStatus the export's own status when the code is among them.
	Lacks        []string `json:"lacks,omitempty"`
	ExportStatus string   `json:"exportStatus,omitempty"`
}

// DeniedRequests are refused requests of one kind: same user, verb,
// subresource, code and message.
type DeniedRequests struct {
	User string `json:"user"`
	// ImpersonatedUser is the identity the requests were made as, when
	// User impersonated it.
	ImpersonatedUser string    `json:"impersonatedUser,omitempty"`
	UserAgent        string    `json:"userAgent,omitempty"`
	Verb             string    `json:"verb"`
	Subresource      string    `json:"subresource,omitempty"`
	Code             int       `json:"code"`
	Message          string    `json:"message"`
	Count            int       `json:"count"`
	First            time.Time `json:"first"`
	Last             time.Time `json:"last"`
	// Webhook is the admission webhook the message names, if any.
	Webhook string `json:"webhook,omitempty"`
	// By says what refused them (refusedBy): "authorization", "admission
	// webhook", "admission webhook call", "admission policy", "admission",
	// or "authorization or admission".
	By string `json:"by,omitempty"`
	// Policy and Binding are the ValidatingAdmissionPolicy that denied
	// the requests and the binding through which it did, from the
	// requests' validation_failure annotation or their message.
	Policy  string `json:"policy,omitempty"`
	Binding string `json:"binding,omitempty"`
	// Budget is the PodDisruptionBudget that refused evictions (By
	// "PodDisruptionBudget"), and BudgetStatus what the API server said of
	// it: "needs 2 healthy pods and has 2 currently" (the last refusal's).
	Budget       string `json:"budget,omitempty"`
	BudgetStatus string `json:"budgetStatus,omitempty"`
	// Lacks and ExportStatus are the first request's, as in AuditRequest.
	Lacks        []string `json:"lacks,omitempty"`
	ExportStatus string   `json:"exportStatus,omitempty"`
}

// PolicyFailures are failed validations of one ValidatingAdmissionPolicy,
// through one binding, on requests of one kind, from the requests'
// validation.policy.admission.k8s.io/validation_failure annotations
// (which the API server writes for bindings with the Audit action).
type PolicyFailures struct {
	Policy            string    `json:"policy"`
	Binding           string    `json:"binding"`
	ValidationActions []string  `json:"validationActions"`
	Message           string    `json:"message"`
	User              string    `json:"user"`
	Verb              string    `json:"verb"`
	Subresource       string    `json:"subresource,omitempty"`
	Denied            bool      `json:"denied"` // the requests were refused
	Count             int       `json:"count"`
	First             time.Time `json:"first"`
	Last              time.Time `json:"last"`
}

// WebhookPatch is one mutating webhook's patch of one request.
type WebhookPatch struct {
	Time    time.Time `json:"time"`
	Verb    string    `json:"verb"`
	Webhook string    `json:"webhook"`
	// Configuration is the MutatingWebhookConfiguration, when recorded.
	Configuration string    `json:"configuration,omitempty"`
	Round         int       `json:"round"`
	Index         int       `json:"index"`
	Ops           []PatchOp `json:"ops"`
}

// PatchOp is one JSONPatch operation (RFC 6902).
type PatchOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	From  string          `json:"from,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
}

// auditEvent is the part of an audit.k8s.io/v1 Event that the replay reads.
type auditEvent struct {
	AuditID   string `json:"auditID"`
	Verb      string `json:"verb"`
	ObjectRef struct {
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	// ImpersonatedUser is the identity an impersonating request was
	// authorized as; User is then the impersonator.
	ImpersonatedUser *struct {
		Username string `json:"username"`
	} `json:"impersonatedUser"`
	UserAgent      string `json:"userAgent"`
	RequestURI     string `json:"requestURI"`
	ResponseStatus struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Details *struct {
			Causes []struct {
				Type    string `json:"reason"`
				Message string `json:"message"`
			} `json:"causes"`
		} `json:"details"`
	} `json:"responseStatus"`
	StageTimestamp time.Time         `json:"stageTimestamp"`
	Received       time.Time         `json:"requestReceivedTimestamp"`
	Annotations    map[string]string `json:"annotations"`
	RequestObject  json.RawMessage   `json:"requestObject"`
	ResponseObject json.RawMessage   `json:"responseObject"`
	// Export, when set, says the event was built from an export's fields
	// and which it lacks (auditexport.go).
	Export *auditExport `json:"podtraceExport"`
}

// impersonated is the username the request was authorized as when it
// impersonated one, else "".
func (ev *auditEvent) impersonated() string {
	if ev.ImpersonatedUser == nil {
		return ""
	}
	return ev.ImpersonatedUser.Username
}

// identity names who a request acted as: the authorized identity first,
// and the impersonator, if any ("flush-controller (impersonated by
// admin)").
func identity(user, impersonated string) string {
	if impersonated == "" {
		return user
	}
	return impersonated + " (impersonated by " + user + ")"
}

const patchAnnotation = "patch.webhook.admission.k8s.io/round_"

// webhookInMessage finds the webhook an admission denial names.
var webhookInMessage = regexp.MustCompile(`admission webhook "([^"]+)" denied the request`)

// The messages and audit annotations with which the API server says which
// stage refused a request (k8s.io/apiserver): a webhook's refusal
// (webhook/errors.ToStatusErr), a failed call to a webhook whose
// failurePolicy is Fail (util/webhook.ErrCallingWebhook, answered 500), a
// ValidatingAdmissionPolicy's (policy/validating, which also annotates the
// event) and the authorizer's decision (endpoints/filters).
var webhookCallInMessage = regexp.MustCompile(`failed calling webhook "([^"]+)"`)

const authorizationDecision = "authorization.k8s.io/decision"

// refusedBy says whether a request that failed (responseStatus.code 400 or
// more) was refused, and by what: authorization or admission, the two
// stages of the API server that decide whether a request may be made. What
// they refuse stays refused until someone changes a policy, a webhook or a
// role; that is what blocks a controller for good.
//
// Other failures are not refusals and are left out: 404 NotFound (a DELETE
// or UPDATE of an object already gone, as a controller's repeated DELETE
// is), 409 Conflict (a write with a stale resourceVersion, which the client
// retries on a fresh read, or a CREATE of a name that exists), 410 Gone
// (an expired watch), 429 TooManyRequests (API priority and fairness: try
// again), 422 Invalid and 400 BadRequest from the API server's own
// validation, and 5xx that no admission stage claims (storage, timeouts).
//
//   - authorization.k8s.io/decision "forbid": the authorizer (RBAC, node,
//     webhook authorizer) refused it, with 403.
//   - the message of a webhook's refusal, whatever the code the webhook
//     chose (the API server makes it 400 at least).
//   - the message of a failed webhook call: a webhook with failurePolicy
//     Fail that could not be reached, timed out or answered nonsense.
//   - a ValidatingAdmissionPolicy's message, or its validation_failure
//     annotation on a 4xx (the annotation alone is also written for the
//     Warn and Audit actions, which refuse nothing).
//   - any other 403: Forbidden after the authorizer allowed it (decision
//     "allow") is a built-in admission plugin's (PodSecurity,
//     NamespaceLifecycle, ResourceQuota...); without the annotation (an
//     audit policy that leaves it out) it is one of the two.
func refusedBy(ev *auditEvent) (string, bool) {
	code, msg := ev.ResponseStatus.Code, ev.ResponseStatus.Message
	switch {
	case !ev.failed():
		return "", false
	case ev.Annotations[authorizationDecision] == "forbid":
		return "authorization", true
	case webhookInMessage.MatchString(msg):
		return "admission webhook", true
	case webhookCallInMessage.MatchString(msg):
		return "admission webhook call", true
	case policyInMessage.MatchString(msg), code < 500 && ev.Annotations[validationFailureAnnotation] != "":
		return "admission policy", true
	case code == 403 && ev.Annotations[authorizationDecision] == "allow":
		return "admission", true
	case code == 403:
		return "authorization or admission", true
	case budgetRefusal(ev):
		return refusedByBudget, true
	}
	return "", false
}

// evictionRefusedMessage is the message of the eviction subresource's 429
// when a PodDisruptionBudget does not allow the eviction
// (pkg/registry/core/pod/storage/eviction.go).
const evictionRefusedMessage = "Cannot evict pod as it would violate the pod's disruption budget."

// budgetRefusal reports whether a failed request was an eviction that a
// PodDisruptionBudget refused: a 429 with a DisruptionBudget cause; or,
// from an export that carries neither the HTTP code nor the causes (GKE's
// entries: RESOURCE_EXHAUSTED), an eviction failed with that message.
func budgetRefusal(ev *auditEvent) bool {
	if budgetCause(ev) != "" {
		return true
	}
	code := ev.ResponseStatus.Code
	return ev.ObjectRef.Subresource == "eviction" && ev.ResponseStatus.Message == evictionRefusedMessage && (code == 429 || code == 0 && ev.failed())
}

// refusedByBudget is the DeniedRequests.By of evictions a
// PodDisruptionBudget refused.
const refusedByBudget = "PodDisruptionBudget"

// disruptionBudgetCause is the cause the eviction subresource gives when a
// PodDisruptionBudget refuses an eviction (policyv1.DisruptionBudgetCause),
// with 429 TooManyRequests: "The disruption budget NAME needs N healthy
// pods and has M currently", or "... is still being processed by the
// server" (pkg/registry/core/pod/storage/eviction.go). API priority and
// fairness answers 429 too, without it.
const disruptionBudgetCause = "DisruptionBudget"

// budgetCause returns the message of a refused request's
// DisruptionBudget cause, or "".
func budgetCause(ev *auditEvent) string {
	if ev.ResponseStatus.Details == nil || ev.ResponseStatus.Code != 429 {
		return ""
	}
	for _, c := range ev.ResponseStatus.Details.Causes {
		if c.Type == disruptionBudgetCause {
			return c.Message
		}
	}
	return ""
}

// budgetInCause reads the budget's name and what the API server said of
// it from a DisruptionBudget cause's message.
var budgetInCause = regexp.MustCompile(`^The disruption budget (\S+) (.*?)\.?$`)

// budgetOf returns the PodDisruptionBudget a DisruptionBudget cause names,
// and what it said of it ("needs 1 healthy pods and has 1 currently").
func budgetOf(cause string) (name, status string) {
	if m := budgetInCause.FindStringSubmatch(cause); m != nil {
		return m[1], m[2]
	}
	return "", cause
}

// policyInMessage finds the ValidatingAdmissionPolicy, and its binding, a
// denial names: the API server's Forbidden error, `pods "x" is forbidden:
// ValidatingAdmissionPolicy 'P' with binding 'B' denied request: ...`
// (k8s.io/apiserver/pkg/admission/plugin/policy/validating/dispatcher.go).
var policyInMessage = regexp.MustCompile(`^[^:]* is forbidden: ValidatingAdmissionPolicy '([^']+)'(?: with binding '([^']+)')? denied request`)

// validationFailureAnnotation holds, as a JSON list, the failed
// validations of ValidatingAdmissionPolicies whose binding has the Audit
// action (validating/dispatcher.go, ValidationFailureValue).
const validationFailureAnnotation = "validation.policy.admission.k8s.io/validation_failure"

type validationFailure struct {
	Message           string   `json:"message"`
	Policy            string   `json:"policy"`
	Binding           string   `json:"binding"`
	ExpressionIndex   int      `json:"expressionIndex"`
	ValidationActions []string `json:"validationActions"`
}

// validationFailures decodes a request's validation_failure annotation.
func validationFailures(ev auditEvent) []validationFailure {
	v, ok := ev.Annotations[validationFailureAnnotation]
	if !ok {
		return nil
	}
	var out []validationFailure
	if json.Unmarshal([]byte(v), &out) != nil {
		return nil
	}
	return out
}

// applyAudit reads the pod's audit records, when the trace holds any: it
// sets lc.Audit, makes the requests the actors of the revisions they
// produced and compares the CREATE as sent with the pod as stored.
func applyAudit(lc *Lifecycle, in Input, opts AdmissionOptions) {
	if len(in.Audit) == 0 {
		return
	}
	a := &Audit{}
	byRV := map[string]uint64{}
	for _, s := range lc.Steps {
		byRV[s.ResourceVersion] = s.Seq
	}
	denied := map[string]*DeniedRequests{}
	configs := map[string]string{} // webhook -> configuration, from the annotations
	var create *auditEvent
	failures := map[string]*PolicyFailures{}
	for _, rec := range in.Audit {
		ev, listed, ok := readAuditEvent(in.Histories, rec)
		if !ok {
			continue
		}
		a.addSource(ev)
		vfs := validationFailures(*ev)
		for _, vf := range vfs {
			denied := ev.failed()
			key := strings.Join([]string{vf.Policy, vf.Binding, vf.Message, ev.User.Username, ev.Verb, ev.ObjectRef.Subresource, strconv.FormatBool(denied)}, "\x00")
			pf := failures[key]
			if pf == nil {
				pf = &PolicyFailures{Policy: vf.Policy, Binding: vf.Binding, ValidationActions: vf.ValidationActions, Message: vf.Message,
					User: ev.User.Username, Verb: ev.Verb, Subresource: ev.ObjectRef.Subresource, Denied: denied, First: ev.StageTimestamp}
				failures[key] = pf
			}
			pf.Count++
			pf.Last = ev.StageTimestamp
		}
		for k, v := range ev.Annotations {
			if strings.HasPrefix(k, "mutation.webhook.admission.k8s.io/") || strings.HasPrefix(k, patchAnnotation) {
				var m struct{ Configuration, Webhook string }
				if json.Unmarshal([]byte(v), &m) == nil && m.Webhook != "" {
					configs[m.Webhook] = m.Configuration
				}
			}
		}
		if ev.failed() {
			by, ok := refusedBy(ev)
			if !ok {
				continue // failed without being refused: see refusedBy
			}
			budget, _ := budgetOf(budgetCause(ev))
			key := strings.Join([]string{ev.User.Username, ev.impersonated(), ev.Verb, ev.ObjectRef.Subresource, strconv.Itoa(ev.ResponseStatus.Code), ev.ResponseStatus.Message, budget}, "\x00")
			d := denied[key]
			if d == nil {
				d = &DeniedRequests{User: ev.User.Username, ImpersonatedUser: ev.impersonated(), UserAgent: ev.UserAgent, Verb: ev.Verb, Subresource: ev.ObjectRef.Subresource,
					Code: ev.ResponseStatus.Code, Message: ev.ResponseStatus.Message, First: ev.StageTimestamp, By: by, Lacks: ev.lacks(), ExportStatus: ev.exportStatus()}
				if m := webhookInMessage.FindStringSubmatch(d.Message); m != nil {
					d.Webhook = m[1]
				} else if m := webhookCallInMessage.FindStringSubmatch(d.Message); m != nil {
					d.Webhook = m[1]
				}
				d.Policy, d.Binding = denyingPolicy(d.Message, vfs)
				denied[key] = d
			}
			d.Count++
			d.Last = ev.StageTimestamp
			if cause := budgetCause(ev); cause != "" {
				// The numbers change from one refusal to the next: the
				// last one's are kept.
				d.Budget, d.BudgetStatus = budgetOf(cause)
			}
			continue
		}
		r := AuditRequest{Time: ev.StageTimestamp, Received: ev.Received, AuditID: ev.AuditID, Verb: ev.Verb, Subresource: ev.ObjectRef.Subresource,
			User: ev.User.Username, ImpersonatedUser: ev.impersonated(), UserAgent: ev.UserAgent, Code: ev.ResponseStatus.Code, ResourceVersion: rec.ResourceVersion,
			Lacks: ev.lacks(), ExportStatus: ev.exportStatus()}
		if ev.Verb == verbDeleteCollection {
			// Its response is no revision it made: it lists the pods as
			// they were before it deleted them.
			r.ResourceVersion, r.Listed, r.Selector = "", listed[lc.UID], selectorOf(ev.RequestURI)
		}
		if ev.Verb == "delete" || ev.Verb == verbDeleteCollection {
			r.GracePeriodSeconds = gracePeriodOf(ev.RequestObject)
		}
		if r.ResourceVersion != "" {
			r.Seq = byRV[r.ResourceVersion]
		} else if r.Subresource == "binding" {
			// A binding answers a Status, not the pod: its revision is
			// the one that reached the scheduled phase.
			if p, ok := lc.Phase(PhaseScheduled); ok {
				r.Seq = p.Seq
			}
		}
		a.Requests = append(a.Requests, r)
		a.Patches = append(a.Patches, patches(*ev)...)
		if ev.Verb == "create" && ev.ObjectRef.Subresource == "" && create == nil {
			create = ev
		}
	}
	// The denied groups, in the order they first appeared.
	for _, d := range denied {
		a.Denied = append(a.Denied, *d)
	}
	sort.Slice(a.Denied, func(i, j int) bool { return a.Denied[i].First.Before(a.Denied[j].First) })
	for _, pf := range failures {
		a.PolicyFailures = append(a.PolicyFailures, *pf)
	}
	sort.Slice(a.PolicyFailures, func(i, j int) bool {
		x, y := a.PolicyFailures[i], a.PolicyFailures[j]
		if !x.First.Equal(y.First) {
			return x.First.Before(y.First)
		}
		return x.Policy+"\x00"+x.Binding < y.Policy+"\x00"+y.Binding
	})
	for i := range a.Patches {
		a.Patches[i].Configuration = configs[a.Patches[i].Webhook]
	}
	a.Configurations = configs
	lc.Audit = a
	attributeByAudit(lc, a.Requests)
	if create != nil {
		auditAdmission(lc, *create, a.Patches, opts)
	}
}

// verbDeleteCollection is the audit verb of a DELETE of a collection: the
// namespace controller's of a namespace's pods, kubectl delete pods --all.
const verbDeleteCollection = "deletecollection"

// readAuditEvent decodes an imported audit event. One that names several
// pods (a deletecollection: the same record for each of them) is decoded
// once per h, its response reduced to the resourceVersion of each pod it
// listed (by UID); what it returns is then shared and must not be
// modified.
func readAuditEvent(h *Histories, rec store.Record) (ev *auditEvent, listed map[string]string, ok bool) {
	decode := func() auditCollection {
		var c auditCollection
		var ev auditEvent
		if decodeAuditEvent(rec.Object, &ev) != nil {
			return c
		}
		if ev.Verb == verbDeleteCollection {
			c.listed = listedPods(ev.ResponseObject)
			ev.ResponseObject = nil
		}
		c.ev = &ev
		return c
	}
	var c auditCollection
	if len(rec.Refs) > 1 {
		c = Memo(h, []store.Record{rec}, decode)
	} else {
		c = decode()
	}
	return c.ev, c.listed, c.ev != nil
}

// decodeAuditEvent decodes an audit event's line as json.Unmarshal would,
// but for its requestObject and responseObject, which it keeps as their
// bytes without reading them: at the RequestResponse level they are the
// pod twice, most of the line, and only a CREATE's and a DELETE's are
// read. The other members are split off with a byte scan and decoded;
// what the scan does not follow (escaped keys) is decoded whole. The
// importer kept only lines encoding/json decoded.
func decodeAuditEvent(raw []byte, ev *auditEvent) error {
	i := skipSpace(raw, 0)
	if i == len(raw) || raw[i] != '{' {
		return json.Unmarshal(raw, ev)
	}
	small := make([]byte, 0, 2048)
	small = append(small, '{')
	var req, resp []byte
	for i = skipSpace(raw, i+1); i < len(raw) && raw[i] != '}'; {
		if raw[i] != '"' {
			return json.Unmarshal(raw, ev)
		}
		end, ok := stringEnd(raw, i+1)
		if !ok || bytes.IndexByte(raw[i:end], '\\') >= 0 {
			return json.Unmarshal(raw, ev)
		}
		key := raw[i+1 : end-1]
		j := skipSpace(raw, end)
		if j == len(raw) || raw[j] != ':' {
			return json.Unmarshal(raw, ev)
		}
		j = skipSpace(raw, j+1)
		vend, ok := skipValue(raw, j)
		if !ok {
			return json.Unmarshal(raw, ev)
		}
		switch string(key) {
		case "requestObject":
			req = raw[j:vend]
		case "responseObject":
			resp = raw[j:vend]
		default:
			if len(small) > 1 {
				small = append(small, ',')
			}
			small = append(small, raw[i:vend]...)
		}
		i = skipSpace(raw, vend)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	if i >= len(raw) || skipSpace(raw, i+1) != len(raw) {
		return json.Unmarshal(raw, ev) // not one whole object: its error
	}
	if err := json.Unmarshal(append(small, '}'), ev); err != nil {
		return err
	}
	ev.RequestObject, ev.ResponseObject = req, resp
	return nil
}

// auditCollection is an audit event decoded, with the pods its response
// listed.
type auditCollection struct {
	ev     *auditEvent
	listed map[string]string // pod UID -> resourceVersion
}

// listedPods returns the UID and resourceVersion of each item of a list
// in a response (a PodList, or the PartialObjectMetadataList a metadata
// client asks for), or nil.
func listedPods(raw json.RawMessage) map[string]string {
	if len(raw) == 0 {
		return nil
	}
	var list struct {
		Items []struct {
			Metadata struct {
				UID             string `json:"uid"`
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if json.Unmarshal(raw, &list) != nil {
		return nil
	}
	out := make(map[string]string, len(list.Items))
	for _, it := range list.Items {
		out[it.Metadata.UID] = it.Metadata.ResourceVersion
	}
	return out
}

// selectorOf returns the label and field selectors of a request URI, as
// "labelSelector=app=web, fieldSelector=spec.nodeName=n1", or "".
func selectorOf(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return ""
	}
	var parts []string
	for _, k := range []string{"labelSelector", "fieldSelector"} {
		if v := u.Query().Get(k); v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, ", ")
}

// gracePeriodOf returns the gracePeriodSeconds of a DELETE's
// DeleteOptions (its audit event's requestObject), or nil.
func gracePeriodOf(raw json.RawMessage) *int64 {
	if len(raw) == 0 {
		return nil
	}
	var o struct {
		GracePeriodSeconds *int64 `json:"gracePeriodSeconds"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return nil
	}
	return o.GracePeriodSeconds
}

// deleteOperation marks the actor of a revision that a DELETE request made,
// whose client only the audit log names.
const deleteOperation = "Delete"

// attributeByAudit makes the request that produced a revision its actor:
// the first successful request whose response carried the revision (later
// requests answered with the same revision changed nothing). The audit log
// names who made it, as whom, and with what client, which managedFields
// and the fields' semantics only infer; a change they left unknown is the
// request's. A step with several managedFields writers is left alone: the
// recording missed revisions between it and the one before, and the
// request made only the last of them.
func attributeByAudit(lc *Lifecycle, reqs []AuditRequest) {
	first := map[uint64]AuditRequest{}
	for _, r := range reqs {
		if r.Seq == 0 || r.Code >= 400 {
			continue
		}
		if f, ok := first[r.Seq]; !ok || r.Time.Before(f.Time) {
			first[r.Seq] = r
		}
	}
	for i := range lc.Steps {
		s := &lc.Steps[i]
		r, ok := first[s.Seq]
		if !ok || len(s.Actors) > 1 {
			continue
		}
		a := r.Actor()
		if len(s.Actors) == 1 {
			a.Manager, a.Operation = s.Actors[0].Manager, s.Actors[0].Operation
		}
		s.Actors = []Actor{a}
		for j := range s.Changes {
			if c := &s.Changes[j]; c.Basis == BasisUnknown {
				c.Basis, c.Candidates = BasisAuditLog, nil
			}
		}
	}
}

// Identity names who the request acted as, the impersonator after it:
// "flush-controller (impersonated by admin)".
func (r AuditRequest) Identity() string { return identity(r.User, r.ImpersonatedUser) }

// Identity names who the requests acted as, the impersonator after it.
func (d DeniedRequests) Identity() string { return identity(d.User, d.ImpersonatedUser) }

// Agent is the request's user agent without the identity it repeats:
// kube-controller-manager names each controller's client after its
// ServiceAccount ("kube-controller-manager/v1.37.2 (linux/amd64)
// kubernetes/$Format/system:serviceaccount:kube-system:job-controller"),
// which Identity names already.
func (r AuditRequest) Agent() string { return agent(r.UserAgent, r.User, r.ImpersonatedUser) }

// Agent is the requests' user agent without the identity it repeats.
func (d DeniedRequests) Agent() string { return agent(d.UserAgent, d.User, d.ImpersonatedUser) }

func agent(userAgent string, users ...string) string {
	for _, u := range users {
		if u != "" {
			if a, ok := strings.CutSuffix(userAgent, "/"+u); ok && a != "" {
				return a
			}
		}
	}
	return userAgent
}

// Actor is the actor of a revision that request r produced.
func (r AuditRequest) Actor() Actor {
	user := r.User
	if r.ImpersonatedUser != "" {
		user = r.ImpersonatedUser
	}
	what := r.Verb
	if r.Subresource != "" {
		what += " " + r.Subresource
	}
	if r.UserAgent != "" {
		what += ", " + r.Agent()
	}
	if lacksField(r.Lacks, lacksImpersonated) {
		what += " (the export does not say whether the request impersonated another user)"
	}
	return Actor{Subresource: r.Subresource, Time: r.Time, Who: r.Identity(), Basis: BasisAuditLog, Detail: what,
		User: user, Impersonator: impersonator(r), UserAgent: r.UserAgent}
}

func impersonator(r AuditRequest) string {
	if r.ImpersonatedUser == "" {
		return ""
	}
	return r.User
}

// patches decodes the patch.webhook.admission.k8s.io annotations of a
// request, in the order the webhooks ran.
func patches(ev auditEvent) []WebhookPatch {
	var out []WebhookPatch
	for k, v := range ev.Annotations {
		if !strings.HasPrefix(k, patchAnnotation) {
			continue
		}
		var round, index int
		if _, err := fmt.Sscanf(strings.TrimPrefix(k, patchAnnotation), "%d_index_%d", &round, &index); err != nil {
			continue
		}
		var p struct {
			Webhook string    `json:"webhook"`
			Patch   []PatchOp `json:"patch"`
		}
		if json.Unmarshal([]byte(v), &p) != nil {
			continue
		}
		out = append(out, WebhookPatch{Time: ev.StageTimestamp, Verb: ev.Verb, Webhook: p.Webhook, Round: round, Index: index, Ops: p.Patch})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Round != out[j].Round {
			return out[i].Round < out[j].Round
		}
		return out[i].Index < out[j].Index
	})
	return out
}

// auditAdmission replaces the inferred admission comparison with the one
// the audit log proves: the pod as sent (requestObject) against the pod as
// stored (responseObject), each change attributed to the webhook whose
// patch made it.
func auditAdmission(lc *Lifecycle, create auditEvent, ps []WebhookPatch, opts AdmissionOptions) {
	var sent, stored corev1.Pod
	if json.Unmarshal(create.RequestObject, &sent) != nil || json.Unmarshal(create.ResponseObject, &stored) != nil || stored.Kind != "Pod" {
		return
	}
	if lc.Admission == nil {
		lc.Admission = &Admission{}
	}
	adm := lc.Admission
	adm.Source = "audit log"
	adm.Changes, adm.Defaults = nil, 0
	var notes []string
	for _, n := range adm.Notes {
		if !strings.Contains(n, "audit log") {
			notes = append(notes, n)
		}
	}
	adm.Notes = notes
	type owned struct {
		webhook string
		op      PatchOp
	}
	var byPath []owned
	for _, p := range ps {
		if p.Verb != "create" {
			continue
		}
		for _, op := range p.Ops {
			byPath = append(byPath, owned{p.Webhook, op})
		}
	}
	for _, c := range ComparePods(restrict(&sent), restrict(&stored)) {
		ac := AdmissionChange{Change: c}
		for _, o := range byPath {
			if patchCovers(o.op, c.Path, &sent) {
				ac.By, ac.Certainty = "mutating webhook "+o.webhook, "certain"
			}
		}
		if ac.By == "" {
			if by, ok := builtinAdmission(c, &stored); ok {
				ac.By, ac.Certainty = by, "likely"
			} else {
				ac.By, ac.Certainty = "a built-in admission plugin or defaulting (no webhook patch sets it)", "likely"
			}
		}
		if !opts.ShowDefaults && ac.By == byDefaulting {
			adm.Defaults++
			continue
		}
		adm.Changes = append(adm.Changes, ac)
	}
}

// patchCovers reports whether the JSONPatch path (/spec/containers/0/image)
// sets the field a Change names (spec.containers[build].image): list
// indexes are resolved to the keys ComparePods uses, from the pod as sent.
func patchCovers(op PatchOp, path string, sent *corev1.Pod) bool {
	p := pointerToPath(op.Path, op.Value, sent)
	if p == "" {
		return false
	}
	return p == path || strings.HasPrefix(path, p+".") || strings.HasPrefix(path, p+"[") ||
		strings.HasPrefix(p, path+".") || strings.HasPrefix(p, path+"[")
}

// pointerToPath turns a JSONPatch path into a Change path. An element
// appended to a keyed list (/spec/containers/-) or added past the end of the
// list as sent is named by the name in the patch's value.
func pointerToPath(pointer string, value json.RawMessage, sent *corev1.Pod) string {
	parts := strings.Split(strings.TrimPrefix(pointer, "/"), "/")
	var b strings.Builder
	for i := 0; i < len(parts); i++ {
		seg := strings.NewReplacer("~1", "/", "~0", "~").Replace(parts[i])
		if i+1 < len(parts) && i >= 1 && parts[i-1] == "spec" {
			var names []string
			switch seg {
			case "containers":
				for _, c := range sent.Spec.Containers {
					names = append(names, c.Name)
				}
			case "initContainers":
				for _, c := range sent.Spec.InitContainers {
					names = append(names, c.Name)
				}
			case "volumes":
				for _, v := range sent.Spec.Volumes {
					names = append(names, v.Name)
				}
			}
			if names != nil {
				n, err := strconv.Atoi(parts[i+1])
				name := ""
				switch {
				case err == nil && n >= 0 && n < len(names):
					name = names[n]
				case i+2 == len(parts) && (parts[i+1] == "-" || err == nil && n == len(names)):
					// The element itself is added: its value names it.
					var elem struct {
						Name string `json:"name"`
					}
					if json.Unmarshal(value, &elem) == nil {
						name = elem.Name
					}
				}
				if name == "" {
					return ""
				}
				b.WriteString("." + seg + "[" + name + "]")
				i++
				continue
			}
		}
		if i > 0 && (parts[i-1] == "labels" || parts[i-1] == "annotations") {
			b.WriteString("[" + seg + "]")
			continue
		}
		b.WriteString("." + seg)
	}
	return strings.TrimPrefix(b.String(), ".")
}

// denyingPolicy names the ValidatingAdmissionPolicy and binding that
// denied a request: the first failure of its validation_failure annotation
// with the Deny action, which the message names too (the API server names
// the first denial); else the one the message names.
func denyingPolicy(message string, vfs []validationFailure) (policy, binding string) {
	m := policyInMessage.FindStringSubmatch(message)
	for _, vf := range vfs {
		if slices.Contains(vf.ValidationActions, "Deny") && (m == nil || m[1] == vf.Policy && m[2] == vf.Binding) {
			return vf.Policy, vf.Binding
		}
	}
	if m != nil {
		return m[1], m[2]
	}
	return "", ""
}

// Summary says, in one line, what was denied, how often and when.
func (d DeniedRequests) Summary() string {
	what := d.Verb
	if d.Subresource != "" {
		what += " " + d.Subresource
	}
	s := "s"
	if d.Count == 1 {
		s = ""
	}
	return fmt.Sprintf("%d %s attempt%s by %s denied (%s): %s, first %s, last %s", d.Count, what, s, d.Identity(), d.CodeText(), d.Message,
		d.First.UTC().Format("15:04:05"), d.Last.UTC().Format("15:04:05"))
}

// deletionSlack is how far apart the API server's clock (an audit event's
// stageTimestamp) and the recorder's (when it observed the revision the
// request made) may be for the one to be taken for the other's cause.
const deletionSlack = 2 * time.Second

// received is when the API server received the request, or, for an audit
// event without that time, when it answered.
func (r AuditRequest) received() time.Time {
	if r.Received.IsZero() {
		return r.Time
	}
	return r.Received
}

// ReadAudit reads a pod's imported audit events (Input.Audit) as requests:
// the successful ones, and the refused or failed ones (any response code
// of 400 or more), consecutive alike failures grouped.
func ReadAudit(recs []store.Record) (requests []AuditRequest, failed []DeniedRequests) {
	for _, rec := range recs {
		var ev auditEvent
		if json.Unmarshal(rec.Object, &ev) != nil {
			continue
		}
		r := AuditRequest{Time: ev.StageTimestamp, AuditID: ev.AuditID, Verb: ev.Verb, Subresource: ev.ObjectRef.Subresource,
			User: ev.User.Username, ImpersonatedUser: ev.impersonated(), UserAgent: ev.UserAgent, Code: ev.ResponseStatus.Code, ResourceVersion: rec.ResourceVersion,
			Lacks: ev.lacks(), ExportStatus: ev.exportStatus()}
		if ev.failed() {
			d := DeniedRequests{User: r.User, ImpersonatedUser: r.ImpersonatedUser, UserAgent: r.UserAgent, Verb: r.Verb, Subresource: r.Subresource,
				Code: r.Code, Message: ev.ResponseStatus.Message, Count: 1, First: r.Time, Last: r.Time, Lacks: r.Lacks, ExportStatus: r.ExportStatus}
			if n := len(failed); n > 0 {
				if p := &failed[n-1]; p.User == d.User && p.Verb == d.Verb && p.Subresource == d.Subresource && p.Code == d.Code && p.Message == d.Message {
					p.Count++
					p.Last = d.Last
					continue
				}
			}
			failed = append(failed, d)
			continue
		}
		requests = append(requests, r)
	}
	return requests, failed
}

// IsDeletion reports whether the request asks for the pod's deletion: a
// DELETE of it, a deletecollection that listed it, or an eviction (the
// API server deletes the pod inside the eviction request).
func (r AuditRequest) IsDeletion() bool {
	switch {
	case r.Code >= 400:
		return false
	case r.Subresource == "":
		return r.Verb == "delete" || r.Verb == verbDeleteCollection
	}
	return r.Verb == "create" && r.Subresource == "eviction"
}

// Deletion returns, from the audit log, the request that asked for the
// pod's deletion, and the other successful deletion requests (in time
// order: those after it, mostly). The one that asked is the one that set
// metadata.deletionTimestamp: the request whose response carried the
// revision that first had it (its resourceVersion), or the
// deletecollection that listed the pod at the revision before it; else
// the first deletion request received by the time that revision was
// observed. The ones after it did not ask; they confirmed the deletion
// (the node's kubelet DELETEs with grace period 0 once the containers
// stopped, and the pod goes) or forced it. A pod deleted at once (no
// grace period, or never on a node) has no revision with a
// deletionTimestamp: its first deletion request asked. asked is nil when
// the log holds none (no log imported, or one that does not cover it).
func (lc *Lifecycle) Deletion() (asked *AuditRequest, others []AuditRequest) {
	if lc.Audit == nil {
		return nil, nil
	}
	var dels []AuditRequest
	for _, r := range lc.Audit.Requests {
		if r.IsDeletion() {
			dels = append(dels, r)
		}
	}
	if len(dels) == 0 {
		return nil, nil
	}
	i := 0
	if req, ok := lc.Phase(PhaseDeletionRequested); ok {
		before := ""
		for j, s := range lc.Steps {
			if s.Seq == req.Seq && j > 0 {
				before = lc.Steps[j-1].ResourceVersion
			}
		}
		i = slices.IndexFunc(dels, func(r AuditRequest) bool {
			return r.Seq == req.Seq || r.Listed != "" && r.Listed == before
		})
		if i < 0 {
			i = slices.IndexFunc(dels, func(r AuditRequest) bool { return !r.received().After(req.Time.Add(deletionSlack)) })
		}
		if i < 0 {
			return nil, dels // all made after it was asked for: none asked
		}
	}
	return &dels[i], append(slices.Clip(dels[:i:i]), dels[i+1:]...)
}
