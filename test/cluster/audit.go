package cluster

// PodAuditPolicy is an audit policy for Options.AuditPolicy that records
// what podtrace import reads: every write about pods with the request as
// sent and the object as stored (RequestResponse), including the
// subresources podtrace keeps (status, binding, eviction,
// ephemeralcontainers, resize); writes of Secrets and ConfigMaps at Metadata
// level only (never their data); nothing else. It is hack/audit-policy.yaml, the
// sample policy users get, without its comments (TestAuditPolicyFile).
const PodAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: RequestResponse
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
  resources:
  - group: ""
    resources: ["pods", "pods/status", "pods/binding", "pods/eviction", "pods/ephemeralcontainers", "pods/resize"]
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
  resources:
  - group: ""
    resources: ["secrets", "configmaps"]
- level: None
`
