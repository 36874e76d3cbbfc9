package otlp

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// A batch is sent once it holds maxBatchSpans spans or about maxBatchBytes
// of their text: OTLP receivers take 4 MiB per request by default (gRPC's
// limit), and a pod of many revisions carries a few hundred KiB.
const (
	maxBatchSpans = 1000
	maxBatchBytes = 2 << 20
)

// Batcher gathers the spans of several pods into requests of a bounded
// size. It is not safe for concurrent use.
type Batcher struct {
	c     *Client
	spans tracetest.SpanStubs
	bytes int
	pods  int // whose spans are in spans

	// Pods counts the pods whose spans were sent, Sent the spans, Requests
	// the requests that carried them.
	Pods, Sent, Requests int
}

// NewBatcher returns a Batcher that sends with c.
func NewBatcher(c *Client) *Batcher { return &Batcher{c: c} }

// Add adds one pod's spans, sending what is gathered first if they would
// not fit; a pod's spans go in one request.
func (b *Batcher) Add(ctx context.Context, spans tracetest.SpanStubs) error {
	n := Size(spans)
	if len(b.spans) > 0 && (len(b.spans)+len(spans) > maxBatchSpans || b.bytes+n > maxBatchBytes) {
		if err := b.Flush(ctx); err != nil {
			return err
		}
	}
	b.spans = append(b.spans, spans...)
	b.bytes += n
	b.pods++
	return nil
}

// Flush sends what is gathered. On an error the spans are kept: a Flush
// again retries them.
func (b *Batcher) Flush(ctx context.Context) error {
	if len(b.spans) == 0 {
		return nil
	}
	if err := b.c.Send(ctx, b.spans); err != nil {
		return err
	}
	b.Pods += b.pods
	b.Sent += len(b.spans)
	b.Requests++
	clear(b.spans)
	b.spans, b.bytes, b.pods = b.spans[:0], 0, 0
	return nil
}

// Size estimates the bytes spans take in a request: their names, their
// attributes' and their events' keys and values, and a little for each.
func Size(spans tracetest.SpanStubs) int {
	n := 0
	for i := range spans {
		s := &spans[i]
		n += 64 + len(s.Name) + len(s.Status.Description)
		for _, a := range s.Attributes {
			n += 8 + len(a.Key) + valueSize(a.Value)
		}
		for _, e := range s.Events {
			n += 24 + len(e.Name)
			for _, a := range e.Attributes {
				n += 8 + len(a.Key) + valueSize(a.Value)
			}
		}
	}
	// The resource's attributes go once per pod (its spans share it).
	if len(spans) > 0 && spans[0].Resource != nil {
		for _, a := range spans[0].Resource.Attributes() {
			n += 8 + len(a.Key) + valueSize(a.Value)
		}
	}
	return n
}

// valueSize is about what an attribute's value takes encoded.
func valueSize(v attribute.Value) int {
	switch v.Type() {
	case attribute.STRING:
		return len(v.AsString())
	case attribute.STRINGSLICE:
		n := 0
		for _, s := range v.AsStringSlice() {
			n += 2 + len(s)
		}
		return n
	}
	return 8
}
