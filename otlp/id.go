package otlp

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// TraceID is the trace id of the pod incarnation uid: the UID's own 16
// bytes when it is a UUID, as the API server makes them (so the id a
// backend shows is the pod's UID without its dashes), else the first 16
// bytes of a SHA-256 of it. The same pod gets the same trace id from every
// export and every recorder.
func TraceID(uid string) trace.TraceID {
	var id trace.TraceID
	if hexUID := strings.ReplaceAll(uid, "-", ""); len(uid) == 36 && len(hexUID) == 32 && uuidDashes(uid) {
		if n, err := hex.Decode(id[:], []byte(hexUID)); err == nil && n == 16 && id.IsValid() {
			return id
		}
	}
	sum := sha256.Sum256([]byte("podtrace pod " + uid))
	copy(id[:], sum[:16])
	if !id.IsValid() {
		id[15] = 1 // an all-zero id is invalid; a SHA-256 never gives one in practice
	}
	return id
}

// uuidDashes reports whether s has a UUID's dashes: 8-4-4-4-12.
func uuidDashes(s string) bool {
	for i, c := range s {
		if (i == 8 || i == 13 || i == 18 || i == 23) != (c == '-') {
			return false
		}
	}
	return true
}

// SpanID is the span id of one span of the pod incarnation uid, named by
// key ("pod" for the root, a stage's name for the others): the first 8
// bytes of a SHA-256 of both. A span is the same span whoever sends it.
func SpanID(uid, key string) trace.SpanID {
	sum := sha256.Sum256([]byte("podtrace span " + uid + "\x00" + key))
	var id trace.SpanID
	copy(id[:], sum[:8])
	if !id.IsValid() {
		id[7] = 1
	}
	return id
}
