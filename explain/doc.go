// Package explain diagnoses a replayed pod: why it is stuck, or how it
// ended, with the evidence in the recording and what to check next.
//
// explain sits above diff: it takes a diff.Lifecycle and the diff.Input it
// was replayed from (Diagnose), or replays one itself (Replay), and returns
// Findings. Each rule (the Rules table in explain.go) reads one Kubernetes
// mechanism, in a file of its own:
//
//   - finalizer.go: a deletion held by a finalizer nobody removes
//     (stuck-finalizer), a finished pod still held by one its controller
//     removes on finish (finalizer-not-removed), and who owns each finalizer;
//   - admission.go and audit.go: the webhooks and admission policies that
//     intercept the request a finalizer's removal needs, matched by package
//     admission as of the request's time, and the audit log's denials that
//     confirm one;
//   - node.go: a terminating pod on a node that is gone or stopped reporting;
//   - schedule.go and nodefit.go: a pod never scheduled, and which filter
//     each recorded node fails;
//   - container.go: image pulls, crash loops, OOM kills;
//   - failed.go: a pod in phase Failed;
//   - ended.go: how every pod that left, or was asked to, ended: the
//     mechanism, the actor (whoever asked for the deletion, never the
//     DELETE that confirmed it) and how it is known; owners.go reads the
//     namespace's and the owners' recorded history for it, decoded once
//     per command (diff.Histories), which tells a controller's deletion
//     when no event of its names the pod;
//   - eviction.go: evictions a PodDisruptionBudget refused (the audit
//     log), and the budgets that guarded an evicted pod.
//
// Rules read Kubernetes semantics (conditions and their reasons, finalizer
// owners, admission API objects, managedFields, events' reasons, audit
// fields), never the names of a scenario. A finding says "unknown" where
// the recording does not decide, and is a warning or critical only where
// something went wrong: a healthy rollout, scale-down or finished Job gets
// an info finding at most.
//
// explain never redacts: its callers do (package redact), findings
// included.
package explain
