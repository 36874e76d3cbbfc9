package auditlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// EKS sends the API server's audit events, when the cluster's control plane
// logging has the audit type, to the CloudWatch Logs group
// /aws/eks/CLUSTER/cluster, in streams named kube-apiserver-audit-ID; each
// log event's message is an audit.k8s.io/v1 Event as the API server wrote
// it. Documents:
//
//   - https://docs.aws.amazon.com/eks/latest/userguide/control-plane-logs.html
//     (the log types, the group and the stream names);
//   - https://docs.aws.amazon.com/cli/latest/reference/logs/filter-log-events.html
//     (`aws logs filter-log-events` prints {"events": [{"logStreamName",
//     "timestamp", "message", "ingestionTime", "eventId"}], ...};
//     get-log-events prints the same events without logStreamName);
//   - https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/S3Export.html
//     (create-export-task writes gzip files to S3 whose lines start with
//     the event's timestamp; the exact layout of a line, a timestamp, one
//     space and the message, is what exported files show, not a documented
//     format).
//
// The message is the whole event: nothing is lost by the envelope, within
// CloudWatch Logs' limit on the size of an event (larger events are not in
// the stream whole; they show as damaged lines).

// eksStreamPrefix starts the names of the audit log streams.
const eksStreamPrefix = "kube-apiserver-audit"

// unwrapCloudWatch reads the audit event of a CloudWatch Logs event.
func unwrapCloudWatch(top map[string]json.RawMessage) (Unwrapped, *Skip) {
	if stream, ok := rawString(top["logStreamName"]); ok && !strings.HasPrefix(stream, eksStreamPrefix) {
		return Unwrapped{}, &Skip{Reason: "CloudWatch Logs event of another stream than " + eksStreamPrefix + "-*"}
	}
	msg, ok := rawString(top["message"])
	if !ok {
		return Unwrapped{}, &Skip{Reason: "unreadable " + string(FormatEKS), Warning: string(FormatEKS) + " whose message is not a string; skipped"}
	}
	return Unwrapped{Event: []byte(msg), Format: FormatEKS}, nil
}

// unwrapS3Line reads the audit event of a line of a CloudWatch Logs export
// to S3: "2024-05-01T10:00:00.123Z {...}".
func unwrapS3Line(b []byte) (Unwrapped, *Skip) {
	i := bytes.IndexByte(b, ' ')
	if i < 0 || !isTimestamp(string(b[:i])) {
		return Unwrapped{}, &Skip{Reason: notExport, Warning: fmt.Sprintf("%s; skipped", describeRecord(b))}
	}
	msg := bytes.TrimSpace(b[i+1:])
	if len(msg) == 0 || msg[0] != '{' {
		return Unwrapped{}, &Skip{Reason: "CloudWatch Logs export line that is not an audit event", Warning: fmt.Sprintf("%s line whose message is %s; skipped", FormatEKSS3, describeRecord(msg))}
	}
	return Unwrapped{Event: msg, Format: FormatEKSS3}, nil
}

// isTimestamp reports whether s is an RFC 3339 time or milliseconds since
// the epoch.
func isTimestamp(s string) bool {
	if _, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return true
	}
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil && len(s) >= 12
}
