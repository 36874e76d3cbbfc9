package otlp

import (
	"testing"
)

func TestTraceID(t *testing.T) {
	tests := []struct {
		name, uid, want string
	}{
		{name: "a UUID is the trace id", uid: "78dc8001-9b83-4f4d-8273-8d448f4ba592", want: "78dc80019b834f4d82738d448f4ba592"},
		{name: "upper case hex too", uid: "78DC8001-9B83-4F4D-8273-8D448F4BA592", want: "78dc80019b834f4d82738d448f4ba592"},
		// Not UUIDs: hashed.
		{name: "dashes misplaced", uid: "78dc80019-b83-4f4d-8273-8d448f4ba592"},
		{name: "not hex", uid: "78dc8001-9b83-4f4d-8273-8d448f4ba59z"},
		{name: "a hand-made uid", uid: "uid-web-1"},
		{name: "the nil UUID is no valid trace id", uid: "00000000-0000-0000-0000-000000000000"},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := TraceID(tt.uid)
			if !id.IsValid() {
				t.Fatalf("TraceID(%q) = %s, not a valid trace id", tt.uid, id)
			}
			if tt.want != "" && id.String() != tt.want {
				t.Errorf("TraceID(%q) = %s, want %s", tt.uid, id, tt.want)
			}
			if tt.want == "" {
				if other, ok := seen[id.String()]; ok {
					t.Errorf("TraceID(%q) = TraceID(%q) = %s", tt.uid, other, id)
				}
				seen[id.String()] = tt.uid
			}
			if again := TraceID(tt.uid); again != id {
				t.Errorf("TraceID(%q) is %s, then %s", tt.uid, id, again)
			}
		})
	}
}

func TestSpanID(t *testing.T) {
	uids := []string{"78dc8001-9b83-4f4d-8273-8d448f4ba592", "uid-web-1"}
	keys := []string{rootKey, StageAdmission, StageScheduling, StageStarting, StageRunning, StageCompleted, StageFailed, StageTerminating, StageStuck}
	seen := map[string]string{}
	for _, uid := range uids {
		for _, k := range keys {
			id := SpanID(uid, k)
			if !id.IsValid() {
				t.Fatalf("SpanID(%q, %q) is not valid", uid, k)
			}
			if SpanID(uid, k) != id {
				t.Errorf("SpanID(%q, %q) changed between calls", uid, k)
			}
			if other, ok := seen[id.String()]; ok {
				t.Errorf("SpanID(%q, %q) = %s, as %s", uid, k, id, other)
			}
			seen[id.String()] = uid + " " + k
		}
	}
}
