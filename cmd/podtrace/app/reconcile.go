package app

import "github.com/podtrace/podtrace/store"

// Reconcile passes the tracer's initial lists to the Writer, which records
// what the trace held as alive and the lists lack as gone while not
// observed (see store.Writer.Reconcile).
func (s *traceSink) Reconcile(l store.Listing) { s.w.Reconcile(l) }
