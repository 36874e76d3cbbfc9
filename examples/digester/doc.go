// Package digester is a stand-in for k8s-digester, the mutating admission
// webhook of the case podtrace was born for, plus the part a CI runner (the
// GitLab runner's kubernetes executor) plays in that case.
//
// # The webhook
//
// [Handler] serves admission.k8s.io/v1 AdmissionReview requests for pods and
// behaves like the digester of that era:
//
//   - On every request, CREATE and UPDATE alike, it first builds a "registry
//     keychain": it looks up each Secret named in spec.imagePullSecrets, in the
//     pod's namespace. If one is missing it answers allowed=false with code 500
//     and the message `failed to create keychain: secrets "NAME" not found`.
//     The API server turns that answer into a rejection whatever the
//     webhook's failurePolicy says: failurePolicy only covers calls that fail.
//   - On CREATE it rewrites every container and init container image given by
//     tag to a digest (`alpine:3.20` -> `alpine@sha256:...`) with a JSONPatch.
//     There is no registry: the digest is sha256 of the image reference, so it
//     is deterministic. Images already pinned by digest are left alone.
//   - On UPDATE, with every pull Secret present, it allows with no patch.
//
// The Secret lookup waits Handler.KeychainLatency first (the Server's default
// is 50 ms), standing in for the network and work that separated the real
// webhook from the API server. Without it the garbage collector's finalizer
// removal sometimes overtakes the deletion of the Secret on a loopback control
// plane, and the pod is not stuck.
//
// [Server] serves the handler over TLS on a loopback listener with a
// self-signed CA made in memory; [Server.CABundle] is that CA for the webhook
// configuration. [Register] points a MutatingWebhookConfiguration at a server
// (pods, CREATE and UPDATE, namespaces labelled digest-resolution=enabled,
// failurePolicy Ignore); [Unregister] removes it.
//
// # The CI runner
//
// [RunJob] creates what a runner creates for one job, in the runner's order:
// the pull Secret, the job pod (containers build and helper, tagged images,
// the Secret in imagePullSecrets), then an ownerReference from the Secret to
// the pod, then a ConfigMap and a Service owned by the pod. [DeleteJob]
// deletes the pod with the propagation policy the runner used: Foreground
// leaves the pod Terminating for good in a namespace the webhook watches,
// because the garbage collector deletes the pull Secret first and its UPDATE
// removing the foregroundDeletion finalizer is then denied. Background does
// not put that finalizer on the pod, so nothing is stuck.
//
// cmd/digester runs the webhook as a program, for the demo.
package digester
