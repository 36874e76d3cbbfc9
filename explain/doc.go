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
//   - container.go: image pulls, crash loops, OOM kills (with the memory
//     limit and request), restarts, containers the kubelet could not start,
//     containers that exited while the pod ran on; init containers named so;
//   - probe.go: a running pod not Ready past what its probes allow, and the
//     probes' failures, each probe quoted;
//   - volume.go: volumes the kubelet could not mount, with their ConfigMap,
//     Secret or claim, and a claim that does not bind (its StorageClass,
//     the volume controllers' events);
//   - deletion.go: a pod present past its grace period that no finalizer
//     holds and whose node still reports: the kubelet did not confirm;
//   - warning.go: Warning events whose meaning the vocabulary gives;
//   - failed.go: a pod in phase Failed (not on its way out);
//   - ended.go: how every pod that left, or was asked to, ended: the
//     mechanism, the actor (whoever asked for the deletion, never the
//     DELETE that confirmed it) and how it is known; owners.go reads the
//     namespace's and the owners' recorded history for it, decoded once
//     per command (diff.Histories), which tells a controller's deletion
//     when no event of its names the pod;
//   - eviction.go: evictions a PodDisruptionBudget refused (the audit
//     log), and the budgets that guarded an evicted pod.
//   - unexplained.go: the last rule, for what no other explains.
//
// # Never silence
//
// unwell.go reads, independent of the rules, the stretches of a pod's
// recorded life in which Kubernetes' own state shows it unwell (Unwell):
// not scheduled, Pending, Running but not Ready past its probes,
// containers waiting, restarting or exiting non-zero, Failed, Terminating
// past its grace period, Warning events. Every such stretch gets a warning
// or critical finding whose evidence overlaps it, the unexplained finding
// if no rule knows the cause, and every Warning event is in some finding's
// evidence: Check verifies both, and the tests run it over every trace
// they have. vocabulary.go maps every reason the pinned Kubernetes writes
// to the findings that read it, or says why it is benign.
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
