package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"time"
	"unicode/utf8"
)

// scanner reads the few fields a row or a selector needs from an object's
// JSON in place, skipping the rest without decoding it: a pod's row reads a
// fraction of its JSON, and encoding/json would check and decode all of it.
// The recorded JSON is an API server's; a malformed one is an error, never a
// panic.
type scanner struct {
	b   []byte
	i   int
	err error
	// memberStart is where the member members last yielded starts (its
	// name's quote), so that a loop body can take the member's bytes.
	memberStart int
}

var errJSON = errors.New("malformed JSON")

func (s *scanner) fail(what string) {
	if s.err == nil {
		s.err = fmt.Errorf("%w: %s at offset %d", errJSON, what, s.i)
	}
	s.i = len(s.b)
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// members yields the key of each member of the object at the cursor; the
// loop body must read or skip its value. A value that is not an object
// (null included) yields nothing and is skipped.
func (s *scanner) members() iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		if s.peek() != '{' {
			s.skip()
			return
		}
		s.i++
		if s.peek() == '}' {
			s.i++
			return
		}
		for s.err == nil {
			if s.peek() != '"' {
				s.fail("want a member name")
				return
			}
			s.memberStart = s.i
			key, raw := s.rawString()
			if !raw {
				key = []byte(s.unquote(key))
			}
			if s.peek() != ':' {
				s.fail("want ':'")
				return
			}
			s.i++
			if !yield(key) {
				return
			}
			switch s.peek() {
			case ',':
				s.i++
			case '}':
				s.i++
				return
			default:
				s.fail("want ',' or '}'")
				return
			}
		}
	}
}

// elements yields once for each element of the array at the cursor; the
// loop body must read or skip it. A value that is not an array yields
// nothing and is skipped.
func (s *scanner) elements() iter.Seq[int] {
	return func(yield func(int) bool) {
		if s.peek() != '[' {
			s.skip()
			return
		}
		s.i++
		if s.peek() == ']' {
			s.i++
			return
		}
		for n := 0; s.err == nil; n++ {
			if !yield(n) {
				return
			}
			switch s.peek() {
			case ',':
				s.i++
			case ']':
				s.i++
				return
			default:
				s.fail("want ',' or ']'")
				return
			}
		}
	}
}

// rawString reads the string at the cursor (which is at its quote) and
// returns its bytes between the quotes; raw is false when they hold an
// escape, for unquote.
func (s *scanner) rawString() (b []byte, raw bool) {
	start := s.i + 1
	raw = true
	high := false
	for i := start; i < len(s.b); i++ {
		switch c := s.b[i]; {
		case c == '"':
			s.i = i + 1
			if raw && high {
				// Invalid UTF-8 is replaced by unquote, as encoding/json does.
				raw = utf8.Valid(s.b[start:i])
			}
			return s.b[start:i], raw
		case c == '\\':
			raw = false
			i++
		case c < 0x20:
			s.i = i
			s.fail("control character in a string")
			return nil, true
		case c >= utf8.RuneSelf:
			high = true
		}
	}
	s.fail("unterminated string")
	return nil, true
}

// unquote decodes the bytes of a string with escapes, as encoding/json does.
func (s *scanner) unquote(b []byte) string {
	q := make([]byte, 0, len(b)+2)
	q = append(append(append(q, '"'), b...), '"')
	var out string
	if err := json.Unmarshal(q, &out); err != nil {
		s.fail("bad string: " + err.Error())
	}
	return out
}

// str reads a string; null or another type is "" (skipped).
func (s *scanner) str() string {
	if s.peek() != '"' {
		s.skip()
		return ""
	}
	b, raw := s.rawString()
	if raw {
		return string(b)
	}
	return s.unquote(b)
}

// num reads a number's text; null or another type is nil (skipped).
func (s *scanner) num() []byte {
	if b := s.number(); b != nil {
		return b
	}
	s.skip()
	return nil
}

// number reads the number at the cursor, nil if there is none.
func (s *scanner) number() []byte {
	s.ws()
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			s.i++
			continue
		}
		break
	}
	if s.i == start {
		return nil
	}
	return s.b[start:s.i]
}

// int32 reads an integer; null is 0. A number out of range or not an
// integer is an error, as encoding/json makes it.
func (s *scanner) int32() int32 {
	b := s.num()
	if b == nil {
		return 0
	}
	n, err := strconv.ParseInt(string(b), 10, 32)
	if err != nil {
		s.fail("want an int32, got " + string(b))
	}
	return int32(n)
}

// bool reads a boolean; null or another type is false (skipped).
func (s *scanner) bool() bool {
	s.ws()
	if s.i+4 <= len(s.b) && string(s.b[s.i:s.i+4]) == "true" {
		s.i += 4
		return true
	}
	s.skip()
	return false
}

// null reads a null if the cursor is at one.
func (s *scanner) null() bool {
	s.ws()
	if s.i+4 <= len(s.b) && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// time reads an RFC 3339 time as metav1.Time does (null or "": zero).
func (s *scanner) time() time.Time {
	v := s.str()
	if v == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		s.fail("bad time " + strconv.Quote(v))
	}
	return t
}

// skip skips the value at the cursor.
func (s *scanner) skip() {
	switch s.peek() {
	case '"':
		s.rawString()
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch c := s.b[s.i]; c {
			case '"':
				s.rawString()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return
				}
			}
			s.i++
		}
		s.fail("unterminated value")
	case 't', 'n':
		s.literal(4)
	case 'f':
		s.literal(5)
	case 0:
		s.fail("want a value")
	default:
		if s.number() == nil {
			s.fail("want a value")
		}
	}
}

func (s *scanner) literal(n int) {
	if s.i+n > len(s.b) {
		s.fail("truncated literal")
		return
	}
	s.i += n
}

// span skips the value at the cursor and returns its bytes.
func (s *scanner) span() []byte {
	s.ws()
	start := s.i
	s.skip()
	if s.err != nil {
		return nil
	}
	return s.b[start:s.i]
}
