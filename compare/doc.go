// Package compare puts two replayed pod lifecycles side by side and names
// what differs in their lives, not in their logs: the decisive differences
// first, ranked by how much they explain a different outcome, then the rest.
//
// # Alignment
//
// The two lifecycles are aligned by phase (created, admitted, scheduled,
// containers started, ready, completed or failed, deletion requested,
// finalizers removed, gone), never by revision number or time: each phase
// is shown as the time since the pod was created.
//
// # What is decisive
//
// Kubernetes semantics, read from the lifecycles' changes, admission, audit
// and findings, in this order of weight:
//
//   - how the deletion was asked for: the propagation policy (the
//     finalizer the API server adds on DELETE: foregroundDeletion for
//     Foreground, orphan for Orphan, none for Background), the grace
//     period, who asked;
//   - denied requests, from the audit log;
//   - the admission webhooks that intercept a pod UPDATE (the request
//     that removes a finalizer) of one pod and not the other's, and why
//     (a namespaceSelector that does not match the other's namespace);
//   - the namespace labels those selectors read;
//   - finalizers: added, removed and by whom, held at the end;
//   - admission at CREATE: webhooks that intercepted, the fields they
//     changed, their patches;
//   - findings, container exits, the node, dependents, and the time spent
//     in each phase when it differs many-fold.
//
// # What is ignored
//
// What always differs between two pods: their names, namespaces and UIDs
// (and names made of them, as a dependent's), generated suffixes, IPs,
// timestamps, container IDs, the API token volume's name. Such
// differences are counted, by kind, and not shown.
package compare
