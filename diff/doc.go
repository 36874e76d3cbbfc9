// Package diff replays the recorded history of one pod into a Lifecycle: the
// revisions in order, each with the field changes it made and the actor that
// made them, the pod's events interleaved in time, the named phases of its
// life (created, scheduled, started, ready, completed, deletion requested,
// deleted) and the objects that depended on it.
//
// Why a pod got stuck or how it ended is package explain's, above diff.
//
// diff never opens a trace file: it consumes store.Records that the caller
// loaded, so it can be tested on hand-made histories and reused on any source
// of records.
//
// # Comparing revisions
//
// Two revisions are compared on the typed object, by the rules of go-cmp
// with the options in compare.go. Lists are compared the way the API server
// merges them, read from the strategic merge patch tags of the Kubernetes
// types: a list with a patchMergeKey (containers and container statuses by
// name, conditions by type, ownerReferences by uid, volumes by name, ...) is
// keyed by it; a list of scalars with the merge strategy (finalizers) is a
// set; tolerations are a set. Every other list is ordered. managedFields and
// resourceVersion are not compared: the first says who made a change, the
// second is shown on every step.
//
// A pod's history is long and each revision changes little, so the replay
// works on what changed. Revisions are decoded in order, and the parts of
// a revision whose JSON is byte for byte that of the revision before (a
// section such as spec, a field such as status.phase, an element of a list
// such as one container status) are not decoded again but shared with it.
// Each revision is split against the previous one's split: a part whose
// bytes are the same is recognised by comparing them, not scanned, and a
// part that changed is split as it was before, so only the bytes that
// changed are scanned, once. Changed scalars, plain strings and times are
// decoded without encoding/json.
// A walker of its own then compares two revisions by go-cmp's rules without
// go-cmp's cost per node, skips the parts they share (shared memory, and
// structs whose bytes are equal, as the copied ones are). Ordered lists that
// differ are compared along an edit script of its own (ordered.go): go-cmp's
// is random by design, and a report must come out the same every time. The
// tests hold the walker to go-cmp over the whole pod (outside ordered
// lists), and the decoder to json.Unmarshal.
//
// # Who changed it
//
// A wrong actor is worse than none: every actor carries its Basis, how it
// is known, and says unknown when the evidence does not decide.
//
//   - managedFields: the entries that are new at a revision, whose time
//     moved to it, or that gained a field in it are its writers (the API
//     server moves the time of the request's manager only, and only when
//     the request set or changed a field). A field set or changed is the
//     writer's whose fieldsV1 owns it. An entry that only lost fields did
//     not write: the API server takes a removed field out of every set.
//     A removal is the writer's when exactly one manager wrote at that
//     revision, and unknown, with the writers as candidates, when several
//     did.
//   - field-semantics: with no writer, what changed can decide it: the
//     pods/binding subresource sets spec.nodeName (the scheduler the pod
//     names), a DELETE sets metadata.deletionTimestamp, the API server
//     removes a pod whose finalizers and grace period are gone.
//   - unknown: otherwise. A request that only removes fields (a finalizer
//     removed by a JSON patch, kubectl label pod P app-) leaves no entry
//     behind, under any field manager: only the audit log names its client.
//   - audit-log: with the audit log imported, the request whose response
//     carried the revision decides: its user (the impersonated identity
//     first, and who impersonated it) and user agent. Of the deletion
//     requests, the one that set the deletionTimestamp asked for the
//     deletion (Lifecycle.Deletion); a DELETE after it (a node's, with
//     grace period 0) confirmed it. A deletecollection's response lists
//     the pods as they were before it deleted them: it made no revision
//     it lists.
//
// # Histories shared by the replays
//
// The pods of a command share objects whose history is long: a
// ReplicaSet's 2,000 pods, its events, their namespace. Histories decodes
// each such history once per command, through the decoder the pods'
// revisions go through (DecodeHistory), keeps views of it that rules ask
// for (Memo), the owners' replayed events and the managedFields field
// sets the pods of one template share. A command makes one and hands it
// to every pod's Input; without one each replay decodes for itself.
package diff
