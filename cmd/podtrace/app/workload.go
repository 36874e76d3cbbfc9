package app

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/store"
)

// workloadKinds are the workload selectors diff and explain take, kubectl's
// names and short names: deploy/web, rs/web-7d9f8, job/x, sts/db, ds/agent.
var workloadKinds = map[string]string{
	"deploy": "Deployment", "deployment": "Deployment", "deployments": "Deployment",
	"rs": "ReplicaSet", "replicaset": "ReplicaSet", "replicasets": "ReplicaSet",
	"job": "Job", "jobs": "Job",
	"sts": "StatefulSet", "statefulset": "StatefulSet", "statefulsets": "StatefulSet",
	"ds": "DaemonSet", "daemonset": "DaemonSet", "daemonsets": "DaemonSet",
}

// workloadArg splits a selector KIND/NAME into the kind's name and the
// workload's; ok is false for a pod name (po/NAME and pod/NAME are pods).
func workloadArg(arg string) (kind, name string, ok bool, err error) {
	prefix, name, found := strings.Cut(arg, "/")
	if !found {
		return "", arg, false, nil
	}
	switch strings.ToLower(prefix) {
	case "po", "pod", "pods":
		return "", name, false, nil
	}
	kind, ok = workloadKinds[strings.ToLower(prefix)]
	if !ok || name == "" {
		return "", "", false, usagef("%q: want a pod name or KIND/NAME, KIND one of deploy, rs, job, sts, ds", arg)
	}
	return kind, name, true, nil
}

// workloadPods returns the recorded pods owned by the workload kind/name
// (through its ReplicaSets for a Deployment), newest first.
func workloadPods(db *store.DB, ns, kind, name string) ([]store.Object, error) {
	owners, err := db.Objects(store.ObjectFilter{Kind: kind, Namespace: ns, Name: name})
	if err != nil {
		return nil, err
	}
	if len(owners) == 0 {
		return nil, noSuchWorkload(db, ns, kind, name)
	}
	namespaces := map[string]bool{}
	for _, o := range owners {
		namespaces[o.Namespace] = true
	}
	if len(namespaces) > 1 {
		return nil, fmt.Errorf("%ss named %q were recorded in several namespaces (%s): pick one with -n", kind, name, strings.Join(sortedSet(namespaces), ", "))
	}
	uids := map[string]bool{}
	for _, o := range owners {
		uids[o.UID] = true
	}
	if kind == "Deployment" {
		for _, o := range owners {
			refs, err := db.Referring(o.UID)
			if err != nil {
				return nil, err
			}
			for _, r := range refs {
				if r.Kind == "ReplicaSet" {
					uids[r.UID] = true
				}
			}
		}
	}
	seen := map[string]bool{}
	var pods []store.Object
	for uid := range uids {
		refs, err := db.Referring(uid)
		if err != nil {
			return nil, err
		}
		for _, r := range refs {
			if r.Kind == "Pod" && r.APIVersion == "v1" && !seen[r.UID] {
				seen[r.UID] = true
				pods = append(pods, r)
			}
		}
	}
	if len(pods) == 0 {
		return nil, fmt.Errorf("%s %s/%s was recorded, but no pod it owns", kind, owners[0].Namespace, name)
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].FirstSeq > pods[j].FirstSeq })
	return pods, nil
}

// noSuchWorkload says that no such workload was recorded, and which were.
func noSuchWorkload(db *store.DB, ns, kind, name string) error {
	all, err := db.Objects(store.ObjectFilter{Kind: kind, Namespace: ns})
	if err != nil {
		return err
	}
	where := "in the trace"
	if ns != "" {
		where = "in namespace " + ns
	}
	if len(all) == 0 {
		return fmt.Errorf("no %s named %q %s, and no %s at all was recorded there", kind, name, where, kind)
	}
	names := map[string]bool{}
	for _, o := range all {
		if ns == "" {
			names[o.Namespace+"/"+o.Name] = true
		} else {
			names[o.Name] = true
		}
	}
	return fmt.Errorf("no %s named %q %s; recorded: %s", kind, name, where, strings.Join(firstOf(sortedSet(names), 10), ", "))
}

// firstOf keeps the first n of list, saying how many more there were.
func firstOf(list []string, n int) []string {
	if len(list) <= n {
		return list
	}
	return append(list[:n:n], fmt.Sprintf("and %d more", len(list)-n))
}

// replayed is a workload's pod, replayed.
type replayed struct {
	obj store.Object
	lc  *explain.Lifecycle
}

// worst is the most severe finding's severity, -1 without one.
func (r replayed) worst() int {
	w := -1
	for _, f := range r.lc.Findings {
		w = max(w, int(f.Severity))
	}
	return w
}

// chooseWorkloadPod picks, among a workload's pods (newest first), the one
// with the most severe finding, else the newest, and lists them all on
// notes.
func chooseWorkloadPod(pods []replayed, selector string, notes io.Writer) replayed {
	chosen := 0
	for i, p := range pods {
		if p.worst() > pods[chosen].worst() {
			chosen = i
		}
	}
	why := "the newest"
	if pods[chosen].worst() >= 0 {
		why = "the most severe finding"
		if chosen == 0 {
			why = "the newest, and the most severe finding"
		}
	}
	if len(pods) > 1 {
		// Two short lines, whatever the number of pods: how they ended,
		// then the one shown and a few others by name.
		count := map[string]int{}
		var outcomes []string
		for _, p := range pods {
			if count[p.lc.Outcome] == 0 {
				outcomes = append(outcomes, p.lc.Outcome)
			}
			count[p.lc.Outcome]++
		}
		sort.SliceStable(outcomes, func(i, j int) bool { return count[outcomes[i]] > count[outcomes[j]] })
		var ended []string
		for _, o := range outcomes {
			ended = append(ended, fmt.Sprintf("%d %s", count[o], o))
		}
		fmt.Fprintf(notes, "podtrace: %s owns %s: %s\n", selector, plural(len(pods), "recorded pod"), strings.Join(ended, ", "))
		shown := pods[chosen]
		line := fmt.Sprintf("%s (%s", shown.obj.Name, shown.lc.Outcome)
		if len(shown.lc.Findings) > 0 {
			line += ", " + shown.lc.Findings[0].ID
		}
		var others []string
		for i, p := range pods {
			if i != chosen {
				others = append(others, p.obj.Name)
			}
		}
		fmt.Fprintf(notes, "podtrace: showing %s), %s; name another to see it: %s\n", line, why, strings.Join(firstOf(others, 3), ", "))
	}
	return pods[chosen]
}

// prefixMatches are the recorded pod names that start with name, for a
// "did you mean".
func prefixMatches(pods []store.Object, name string, withNamespace bool) []string {
	m := map[string]bool{}
	for _, p := range pods {
		if strings.HasPrefix(p.Name, name) {
			if withNamespace {
				m[p.Namespace+"/"+p.Name] = true
			} else {
				m[p.Name] = true
			}
		}
	}
	return sortedSet(m)
}
