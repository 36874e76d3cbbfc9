// Package otlp turns a replayed pod into an OpenTelemetry trace and sends it
// over OTLP, so that the pods of many clusters can be searched in one
// tracing backend (Jaeger, or anything that takes OTLP).
//
// otlp sits beside report: it takes pods replayed by diff, explained by
// explain and redacted by redact (Pod, built by PodOf from a lifecycle and
// the input it was replayed from), never the trace file. Its callers in
// cmd/podtrace read the trace.
//
// # One trace per pod incarnation
//
// The trace id is the pod's UID (TraceID): its 16 bytes, so the id a
// backend shows is the UID without its dashes. Span ids are derived from
// the UID and the span's name (SpanID). The same pod gives the same ids
// whoever sends it and however often: an export run twice, or two
// recorders of one cluster, add to one trace, not two.
//
// The spans (Spans):
//
//	pod NAMESPACE/NAME          root: creation to deletion, or to the end of the recording
//	├── admission               the pod's creation stamp to its first revision seen; what admission changed
//	├── scheduling              created to scheduled
//	├── image pull and start    scheduled to the first container started
//	├── running                 started to completed, failed or the deletion request
//	├── completed / failed      finished to the deletion request
//	└── terminating             deletion requested to deleted
//	    └── stuck               the end of the grace period to the end of the recording, still there
//
// A stage runs from the phase that opens it (diff's phases) to the one that
// opens the next; the last one still open when the recording ended says
// podtrace.open. Each revision is an event (pod updated #SEQ: its changes,
// its actor and how that is known), and so are the pod's Kubernetes events,
// its phases, its dependents appearing and being deleted, and its gaps in
// observation, each on the stage span of its time. Each finding of explain
// is an event of the root span (severity, headline, evidence, suspects,
// next steps); the root's status is Error when one is critical.
//
// # Attributes
//
// The resource of a pod's spans follows OpenTelemetry's semantic
// conventions for Kubernetes: service.name "podtrace", k8s.cluster.name,
// k8s.namespace.name, k8s.pod.name, k8s.pod.uid, k8s.node.name,
// k8s.pod.label.KEY, and its controllers' k8s.replicaset.name,
// k8s.deployment.name, k8s.statefulset.name, k8s.daemonset.name,
// k8s.job.name, k8s.cronjob.name (with their uids). The root span carries
// podtrace.outcome, podtrace.finding (the most severe finding's id: the one
// a search by tag finds) and podtrace.findings (all of them),
// k8s.pod.status.phase, the phase path and counts.
//
// Attributes are in key order and events in name order, names made unique
// in a span: the order Jaeger's query service sorts a stored trace into.
// A span sent again is then byte for byte the one stored, and Jaeger's
// deduplication of identical spans drops it. Backends show events in time
// order, whatever their order on the wire.
//
// # Sending
//
// Client sends with OpenTelemetry's OTLP exporters (gRPC or HTTP, TLS, a CA
// file, headers); Batcher gathers pods into requests of a bounded size. The
// spans are built whole (tracetest.SpanStub, read-only spans of the SDK),
// not through the SDK's Tracer, which is for live instrumentation: it makes
// random ids and stamps the present, where a pod's spans have ids of their
// own and times from the past.
package otlp
