package serve

import (
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// resource is one kind the trace holds, as discovery names it.
type resource struct {
	group, version, kind, plural string
	namespaced                   bool
	short                        []string
}

func (r resource) apiVersion() string {
	if r.group == "" {
		return r.version
	}
	return r.group + "/" + r.version
}

// known names the resources of the kinds podtrace records, as the API
// server does; a recorded kind not listed gets its lowercased plural.
var known = map[string]resource{
	"v1 Pod":                             {plural: "pods", namespaced: true, short: []string{"po"}},
	"v1 Event":                           {plural: "events", namespaced: true, short: []string{"ev"}},
	"v1 Node":                            {plural: "nodes", short: []string{"no"}},
	"v1 Namespace":                       {plural: "namespaces", short: []string{"ns"}},
	"v1 Secret":                          {plural: "secrets", namespaced: true},
	"v1 ConfigMap":                       {plural: "configmaps", namespaced: true, short: []string{"cm"}},
	"v1 Service":                         {plural: "services", namespaced: true, short: []string{"svc"}},
	"v1 ServiceAccount":                  {plural: "serviceaccounts", namespaced: true, short: []string{"sa"}},
	"v1 PersistentVolumeClaim":           {plural: "persistentvolumeclaims", namespaced: true, short: []string{"pvc"}},
	"v1 PersistentVolume":                {plural: "persistentvolumes", short: []string{"pv"}},
	"v1 Endpoints":                       {plural: "endpoints", namespaced: true, short: []string{"ep"}},
	"v1 ResourceQuota":                   {plural: "resourcequotas", namespaced: true, short: []string{"quota"}},
	"v1 LimitRange":                      {plural: "limitranges", namespaced: true, short: []string{"limits"}},
	"apps/v1 ReplicaSet":                 {plural: "replicasets", namespaced: true, short: []string{"rs"}},
	"apps/v1 Deployment":                 {plural: "deployments", namespaced: true, short: []string{"deploy"}},
	"apps/v1 StatefulSet":                {plural: "statefulsets", namespaced: true, short: []string{"sts"}},
	"apps/v1 DaemonSet":                  {plural: "daemonsets", namespaced: true, short: []string{"ds"}},
	"apps/v1 ControllerRevision":         {plural: "controllerrevisions", namespaced: true},
	"batch/v1 Job":                       {plural: "jobs", namespaced: true},
	"batch/v1 CronJob":                   {plural: "cronjobs", namespaced: true, short: []string{"cj"}},
	"policy/v1 PodDisruptionBudget":      {plural: "poddisruptionbudgets", namespaced: true, short: []string{"pdb"}},
	"coordination.k8s.io/v1 Lease":       {plural: "leases", namespaced: true},
	"events.k8s.io/v1 Event":             {plural: "events", namespaced: true, short: []string{"ev"}},
	"discovery.k8s.io/v1 EndpointSlice":  {plural: "endpointslices", namespaced: true},
	"scheduling.k8s.io/v1 PriorityClass": {plural: "priorityclasses", short: []string{"pc"}},
	"storage.k8s.io/v1 StorageClass":     {plural: "storageclasses", short: []string{"sc"}},
	"admissionregistration.k8s.io/v1 MutatingWebhookConfiguration":     {plural: "mutatingwebhookconfigurations"},
	"admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration":   {plural: "validatingwebhookconfigurations"},
	"admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy":        {plural: "validatingadmissionpolicies"},
	"admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBinding": {plural: "validatingadmissionpolicybindings"},
	"admissionregistration.k8s.io/v1 MutatingAdmissionPolicy":          {plural: "mutatingadmissionpolicies"},
	"admissionregistration.k8s.io/v1 MutatingAdmissionPolicyBinding":   {plural: "mutatingadmissionpolicybindings"},
}

// recorded are the kinds podtrace record watches (tracer/kind.go): served
// even when the trace holds none of them, as an API server serves an empty
// list, unless a session says it could not watch the kind. Of Services,
// Secrets and ConfigMaps it keeps those pods own.
var recorded = [][2]string{
	{"v1", "Pod"}, {"v1", "Event"}, {"v1", "Namespace"}, {"v1", "Node"},
	{"v1", "Service"}, {"v1", "Secret"}, {"v1", "ConfigMap"}, {"v1", "PersistentVolumeClaim"},
	{"apps/v1", "ReplicaSet"}, {"apps/v1", "Deployment"}, {"apps/v1", "StatefulSet"}, {"apps/v1", "DaemonSet"},
	{"batch/v1", "Job"}, {"batch/v1", "CronJob"}, {"storage.k8s.io/v1", "StorageClass"},
	{"admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"},
	{"admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"},
}

// newResource names the resource of a recorded apiVersion and kind.
func newResource(apiVersion, kind string, namespaced bool) resource {
	r, ok := known[apiVersion+" "+kind]
	if !ok {
		r = resource{plural: plural(strings.ToLower(kind)), namespaced: namespaced}
	}
	r.kind = kind
	r.group, r.version, _ = strings.Cut(apiVersion, "/")
	if r.version == "" {
		r.group, r.version = "", apiVersion
	}
	return r
}

func plural(s string) string {
	switch {
	case strings.HasSuffix(s, "s"), strings.HasSuffix(s, "x"), strings.HasSuffix(s, "ch"):
		return s + "es"
	case strings.HasSuffix(s, "y") && !strings.HasSuffix(s, "ey"):
		return s[:len(s)-1] + "ies"
	}
	return s + "s"
}

// resources are the recorded kinds, by group version.
type resources struct {
	byGV map[string][]resource // "" + "/v1" style keys: apiVersion
}

func (rs *resources) add(r resource) {
	if rs.byGV == nil {
		rs.byGV = map[string][]resource{}
	}
	for _, have := range rs.byGV[r.apiVersion()] {
		if have.kind == r.kind {
			return
		}
	}
	rs.byGV[r.apiVersion()] = append(rs.byGV[r.apiVersion()], r)
}

// find returns the resource of the plural name in apiVersion.
func (rs *resources) find(apiVersion, plural string) (resource, bool) {
	for _, r := range rs.byGV[apiVersion] {
		if r.plural == plural {
			return r, true
		}
	}
	return resource{}, false
}

// groups lists the recorded API groups, core ("") left out, by name.
func (rs *resources) groups() []metav1.APIGroup {
	vs := map[string][]string{}
	for gv, list := range rs.byGV {
		if list[0].group == "" {
			continue
		}
		vs[list[0].group] = append(vs[list[0].group], gv)
	}
	names := make([]string, 0, len(vs))
	for g := range vs {
		names = append(names, g)
	}
	sort.Strings(names)
	var out []metav1.APIGroup
	for _, g := range names {
		sort.Strings(vs[g])
		grp := metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: g}
		for _, gv := range vs[g] {
			_, v, _ := strings.Cut(gv, "/")
			grp.Versions = append(grp.Versions, metav1.GroupVersionForDiscovery{GroupVersion: gv, Version: v})
		}
		grp.PreferredVersion = grp.Versions[0]
		out = append(out, grp)
	}
	return out
}

// list is the APIResourceList of apiVersion.
func (rs *resources) list(apiVersion string) (metav1.APIResourceList, bool) {
	l := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: apiVersion}
	list, ok := rs.byGV[apiVersion]
	if !ok {
		return l, false
	}
	for _, r := range list {
		l.APIResources = append(l.APIResources, metav1.APIResource{
			Name: r.plural, SingularName: strings.ToLower(r.kind), Namespaced: r.namespaced, Kind: r.kind,
			Verbs: metav1.Verbs{"get", "list", "watch"}, ShortNames: r.short,
		})
	}
	sort.Slice(l.APIResources, func(i, j int) bool { return l.APIResources[i].Name < l.APIResources[j].Name })
	return l, true
}
