package cloudexport

import (
	"compress/gzip"
	"fmt"
	"io"
	"time"
)

// EKS is where the EKS events are said to come from (placeholders).
type EKS struct {
	Cluster string
}

// DefaultEKS names a placeholder cluster.
var DefaultEKS = EKS{Cluster: "ci"}

// cloudWatchEvent is an event as `aws logs filter-log-events` prints it,
// in the API's field order.
type cloudWatchEvent struct {
	LogStreamName string `json:"logStreamName"`
	Timestamp     int64  `json:"timestamp"`
	Message       string `json:"message"`
	IngestionTime int64  `json:"ingestionTime"`
	EventID       string `json:"eventId"`
}

// Stream is the placeholder name of the cluster's audit log stream:
// kube-apiserver-audit- and 32 hex digits, as EKS names them.
func (x EKS) Stream() string {
	return fmt.Sprintf("kube-apiserver-audit-%016x%016x", fnv(x.Cluster), fnv(x.Cluster+"/audit"))
}

func (x EKS) event(e Event) cloudWatchEvent {
	ms := e.StageTimestamp.UnixMilli()
	return cloudWatchEvent{LogStreamName: x.Stream(), Timestamp: ms, Message: string(e.Line), IngestionTime: ms + 1500,
		EventID: fmt.Sprintf("%020d%020d", fnv(e.AuditID)%1e19, fnv(e.AuditID+"/id")%1e19)}
}

// WriteFilterLogEvents writes the events as `aws logs filter-log-events
// --log-group-name /aws/eks/CLUSTER/cluster --log-stream-name-prefix
// kube-apiserver-audit --output json` prints them.
func (x EKS) WriteFilterLogEvents(w io.Writer, events []Event) error {
	out := struct {
		Events             []cloudWatchEvent `json:"events"`
		SearchedLogStreams []struct {
			LogStreamName      string `json:"logStreamName"`
			SearchedCompletely bool   `json:"searchedCompletely"`
		} `json:"searchedLogStreams"`
	}{Events: []cloudWatchEvent{}}
	for _, e := range events {
		out.Events = append(out.Events, x.event(e))
	}
	out.SearchedLogStreams = append(out.SearchedLogStreams, struct {
		LogStreamName      string `json:"logStreamName"`
		SearchedCompletely bool   `json:"searchedCompletely"`
	}{x.Stream(), true})
	return indent(w, out, "    ")
}

// WriteS3 writes the events as a CloudWatch Logs export task writes a
// stream to S3 (TASK/STREAM/000000.gz): gzip, each line the event's time,
// a space and its message.
func (x EKS) WriteS3(w io.Writer, events []Event) error {
	zw := gzip.NewWriter(w)
	zw.ModTime = time.Unix(0, 0) // reproducible bytes
	for _, e := range events {
		if _, err := fmt.Fprintf(zw, "%s %s\n", e.StageTimestamp.UTC().Format("2006-01-02T15:04:05.000Z"), e.Line); err != nil {
			return err
		}
	}
	return zw.Close()
}
