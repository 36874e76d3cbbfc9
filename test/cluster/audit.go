package cluster

// PodAuditPolicy is an audit policy for Options.AuditPolicy that records
// what podtrace import reads: every request about pods with the request as
// sent and the object as stored (RequestResponse), including status,
// binding and eviction; Secrets at Metadata level only (never their data);
// nothing else.
const PodAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: RequestResponse
  resources:
  - group: ""
    resources: ["pods", "pods/status", "pods/binding", "pods/eviction"]
- level: Metadata
  resources:
  - group: ""
    resources: ["secrets"]
- level: None
`
