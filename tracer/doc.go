// Package tracer watches a Kubernetes cluster with shared informers and turns
// every revision it sees into a store.Record. It knows client-go, not bbolt:
// records leave through a Sink, in batches.
//
// # What is watched
//
// Always, when permitted:
//
//   - pods (filtered by the pod label selector), every revision;
//   - core/v1 events: every event in scope when no pod selector is given,
//     otherwise the events whose involvedObject is a recorded object;
//   - namespaces (only the recorded namespace when one is given) and nodes;
//   - the pod owners: ReplicaSets, Deployments, StatefulSets, DaemonSets,
//     Jobs and CronJobs;
//   - mutating and validating webhook configurations (cluster-scoped);
//   - the pods' dependents: Secrets, ConfigMaps, PersistentVolumeClaims and
//     Services that have an ownerReference to a recorded Pod, or had one in a
//     revision already recorded (so their deletion is recorded too).
//
// Secrets, ConfigMaps and PersistentVolumeClaims are watched through the
// metadata API: their data is never requested, and their records hold a
// PartialObjectMetadata with the real apiVersion and kind set.
//
// Pods and events are required: Preflight fails when the user may not list
// and watch them, naming the verb and the kubectl command to check it. Every
// other kind is optional: a missing permission is a warning and its informer
// is not started.
//
// # Records
//
// An informer ADD from the initial list becomes an Initial record, later ADDs
// Added, UPDATEs Updated (skipped when the resourceVersion did not change: a
// relist duplicate), DELETEs Deleted, and cache.DeletedFinalStateUnknown
// tombstones DeletedUnknown. Object is the object as JSON with apiVersion and
// kind set and managedFields kept; Refs holds the ownerReference UIDs and, for
// events, the involvedObject UID first. A DeletedUnknown record has no
// object: the store keeps the object's last recorded revision as its final
// state.
//
// # What the recorder keeps in memory
//
// Not the cluster: the informers' caches hold a small entry per object
// (namespace, name, UID, resourceVersion), not the objects a shared informer
// keeps. The transform wraps each decoded object; the handler takes the
// object out, records it, and lets it go (see cached). The trace, not the
// recorder, is the copy of the cluster's history.
//
// The JSON of each revision is the largest cost of recording beside the
// informers' own: encode writes managedFields by hand (their FieldsV1 and
// times are json.Marshalers whose output encoders parse again) and the rest
// with segmentio/encoding, the bytes encoding/json writes.
//
// # Order of work
//
// Informers start in two waves: pods, owners, namespaces, nodes and webhook
// configurations first; events and dependents once the first wave has
// delivered its initial lists, so that the filters know the recorded objects.
// When a pod selector is given, an event or dependent that names a pod not
// seen yet is held for a few seconds (the pod's own watch may lag), then
// dropped.
//
// Handlers send records on a channel to one writer goroutine, which hands
// them to the Sink in batches (by size or after a short interval). On
// shutdown the order is sloop's: stop the informers (their handlers return),
// close the channel, wait for the writer to flush the last batch.
//
// # When the API server goes away
//
// Informers retry by themselves, and their reflectors retry failed watches
// without calling the watch error handlers, so the tracer watches its HTTP
// requests instead: after a few failures over five seconds it warns (then once
// a minute) and says when the server answers again. A reflector waiting in
// its watch-list back-off does not notice cancellation (client-go v0.37), so
// shutdown waits at most five seconds for the informers, then writes what was
// queued and returns.
package tracer
