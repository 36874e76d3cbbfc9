package auditlog

import (
	"bytes"
	"encoding/json"
)

// Most lines of an audit log are not kept: other stages, other resources,
// reads. The header pass reads the few top-level fields that decide that
// (kind, apiVersion, stage, verb, objectRef) and skips over the rest,
// objects included, without decoding or validating it: lines it rejects
// cost a light scan instead of a full json.Unmarshal. A line it cannot
// read, or does not reject, goes through the full decode, which validates
// it and reports damage.

// header holds the raw values of the fields the header pass reads. It
// scans the whole line (a byte loop over strings and brackets, an order of
// magnitude cheaper than decoding), so that a line that does not close, or
// names a header field twice, goes to the full decode.
type header struct {
	kind, apiVersion, stage, verb []byte // string contents, without escapes
	objectRef                     []byte // the raw object, or nil
}

// headerSkip returns why line (trimmed, not empty) is not kept, judged from
// its header alone, or nil when the full decode must decide.
func headerSkip(line []byte, want Want) *Skip {
	if line[len(line)-1] != '}' {
		return nil // damaged: the full decode says how
	}
	h, ok := scanHeader(line)
	if !ok || string(h.kind) != Kind || string(h.apiVersion) != APIVersion {
		return nil
	}
	if string(h.stage) != "ResponseComplete" {
		if h.stage == nil {
			return nil
		}
		return &Skip{Reason: "stage " + string(h.stage) + " (only ResponseComplete is kept)"}
	}
	if h.objectRef == nil {
		return &Skip{Reason: "not about a pod"}
	}
	var ref objectRef
	if json.Unmarshal(h.objectRef, &ref) != nil {
		return nil
	}
	if h.verb == nil {
		return nil
	}
	if skip := skipRef(string(h.verb), &ref); skip != nil {
		return skip
	}
	if want != nil {
		if reason := want(ref.Namespace, ref.Name); reason != "" {
			return &Skip{Reason: reason}
		}
	}
	return nil
}

// scanHeader reads the header fields of the JSON object b; ok is false
// when b is not an object it can read that way: brackets or strings that do
// not close, something after the object, a header field given twice.
func scanHeader(b []byte) (h header, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return h, false
	}
	i++
	seenRef := false
	for first := true; ; first = false {
		i = skipSpace(b, i)
		if i >= len(b) {
			return h, false
		}
		if b[i] == '}' {
			return h, skipSpace(b, i+1) == len(b)
		}
		if !first {
			if b[i] != ',' {
				return h, false
			}
			i = skipSpace(b, i+1)
		}
		if i >= len(b) || b[i] != '"' {
			return h, false
		}
		end := skipString(b, i)
		if end < 0 {
			return h, false
		}
		key := b[i+1 : end-1]
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return h, false
		}
		i = skipSpace(b, i+1)
		end = skipValue(b, i)
		if end < 0 {
			return h, false
		}
		val := b[i:end]
		i = end
		var dst *[]byte
		switch string(key) {
		case "kind":
			dst = &h.kind
		case "apiVersion":
			dst = &h.apiVersion
		case "stage":
			dst = &h.stage
		case "verb":
			dst = &h.verb
		case "objectRef":
			if seenRef {
				return h, false
			}
			seenRef = true
			if val[0] == '{' {
				h.objectRef = val
			}
		}
		if dst != nil {
			// Once, a string without escapes; else the full decode
			// decides.
			if *dst != nil || len(val) < 2 || val[0] != '"' || bytes.IndexByte(val, '\\') >= 0 {
				return h, false
			}
			*dst = val[1 : len(val)-1]
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at b[i] ('"'),
// or -1.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		// Escaped if an odd number of backslashes precede it.
		n := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		j++
	}
	return -1
}

// skipValue returns the index after the JSON value that starts at b[i], or
// -1. It checks the nesting of brackets and strings, not the rest.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end := skipString(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\t' && b[j] != '\r' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}
