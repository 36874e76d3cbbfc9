package auditlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
)

// A file of audit events comes in one of two shapes, told apart by its
// first bytes:
//
//   - JSON lines (kube-apiserver's log, GKE's sink to Cloud Storage, AKS's
//     storage blobs) or S3 export lines: read line by line, each line a
//     record. A file whose first line is a kube-apiserver event is read as
//     kube-apiserver writes it: each line goes to Parse as it is, and only
//     a line Parse cannot read as an audit event is tried as an export's
//     record (a mixed file).
//   - one JSON document, or several one after the other (gcloud's JSON
//     array of entries, aws's {"events": [...]}, az's array of rows, an
//     old storage blob's {"records": [...]}): read with a streaming
//     decoder, each element of an array of records, or each object that
//     is not such a container, a record. Damage in a document ends the
//     file: the records before it are read.

// Entry is one record of a file, read.
type Entry struct {
	// Line is the line of the file the record starts on; Index is its
	// number in a JSON document (0 for a JSON line).
	Line, Index int
	// Event is what Parse read of the audit event, when Skip is nil.
	Event Event
	// Unwrapped is the audit event and where it came from; its Event is
	// valid until the next call of Next.
	Unwrapped
	// Skip says why the record is not kept.
	Skip *Skip
}

// Where names the record's place in its file: "12" or "12 (entry 3)".
func (e Entry) Where() string {
	if e.Index > 0 {
		return fmt.Sprintf("%d (entry %d)", e.Line, e.Index)
	}
	return fmt.Sprint(e.Line)
}

// DocumentError is damage in a JSON document that ends the reading of its
// file, at Line: a syntax error, or the end of the file inside a value
// (truncated). The records before it were read.
type DocumentError struct {
	Line int
	Err  error
}

func (e *DocumentError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Text()) }

// Text says what the damage is, without its line.
func (e *DocumentError) Text() string {
	if errors.Is(e.Err, io.ErrUnexpectedEOF) {
		return "the JSON document ends in the middle of a value (truncated?)"
	}
	return e.Err.Error()
}

func (e *DocumentError) Unwrap() error { return e.Err }

// Source reads the records of one file (see above). Its methods are not
// safe for concurrent use.
type Source struct {
	br        *bufio.Reader
	document  bool
	sc        *bufio.Scanner
	line      int
	started   bool
	apiserver bool // the first line is a kube-apiserver event

	// A document being read: the whole file, or a line that is one.
	doc     *document
	docLine int // the line a one-line document is on, else 0
}

// NewSource reads r, gunzipped already. It peeks at the first bytes to
// tell the file's shape.
func NewSource(r io.Reader) *Source {
	s := &Source{br: bufio.NewReaderSize(r, 256<<10)}
	first := s.firstByte()
	switch {
	case first == '[':
		s.document = true
	case first == '{':
		// A first line that is a whole JSON value: JSON lines. A
		// first line longer than the buffer is taken for one too (a
		// large event, or a compact document on one line).
		b, _ := s.br.Peek(s.br.Size())
		b = bytes.TrimLeft(b, " \t\r\n")
		if i := bytes.IndexByte(b, '\n'); i >= 0 && !json.Valid(bytes.TrimSpace(b[:i])) {
			s.document = true
		}
	}
	if s.document {
		s.doc = newDocument(s.br, 0)
		return s
	}
	s.sc = bufio.NewScanner(s.br)
	s.sc.Buffer(make([]byte, 0, 256<<10), MaxLine) // grows for a longer line, up to MaxLine
	return s
}

// firstByte peeks at the first byte of the file that is not white space
// or a UTF-8 byte order mark, and drops the mark.
func (s *Source) firstByte() byte {
	if b, _ := s.br.Peek(3); bytes.Equal(b, []byte("\xef\xbb\xbf")) {
		_, _ = s.br.Discard(3)
	}
	for n := 64; ; n *= 2 {
		b, err := s.br.Peek(n)
		if t := bytes.TrimLeft(b, " \t\r\n"); len(t) > 0 {
			return t[0]
		}
		if err != nil || n >= s.br.Size() {
			return 0
		}
	}
}

// Shape says how the file is read: "JSON lines" or "JSON document".
func (s *Source) Shape() string {
	if s.document {
		return "JSON document"
	}
	return "JSON lines"
}

// Next reads the next record; want, when not nil, is Parse's. It returns
// io.EOF after the last one. Any other error ends the file: a
// *DocumentError, bufio.ErrTooLong (a line longer than MaxLine), or the
// reader's (a truncated gzip stream). The records before it were read.
func (s *Source) Next(want Want) (Entry, error) {
	for {
		if s.doc != nil {
			rec, line, n, err := s.doc.next()
			if s.docLine == 0 {
				if err != nil {
					return Entry{}, err
				}
				return s.unwrap(rec, line, n, want), nil
			}
			// A line that is a document: its damage is the line's.
			var de *DocumentError
			switch {
			case err == io.EOF:
				s.doc = nil
				continue
			case errors.As(err, &de):
				read := s.doc.n
				s.doc = nil
				return Entry{Line: s.docLine, Skip: &Skip{Reason: "malformed JSON", Warning: fmt.Sprintf("a JSON document on one line, damaged after %d records (%v); the rest of the line is skipped", read, de.Err)}}, nil
			case err != nil:
				return Entry{}, err
			}
			return s.unwrap(rec, s.docLine, n, want), nil
		}
		if !s.sc.Scan() {
			if err := s.sc.Err(); err != nil {
				return Entry{}, err
			}
			return Entry{}, io.EOF
		}
		s.line++
		b := bytes.TrimSpace(s.sc.Bytes())
		if len(b) == 0 {
			return Entry{Line: s.line, Skip: &Skip{Reason: "empty line"}}, nil
		}
		if !s.started {
			s.started = true
			s.apiserver = IsEvent(b)
		}
		if s.apiserver {
			// As kube-apiserver wrote it: the lines Parse cannot read
			// as an audit event may be an export's (a mixed file).
			// A skip without a warning is an audit event Parse read and
			// does not keep (most lines): no second look.
			ev, skip := Parse(b, want)
			if skip == nil || skip.Warning == "" || IsEvent(b) {
				return Entry{Line: s.line, Event: ev, Unwrapped: Unwrapped{Event: b, Format: FormatAPIServer}, Skip: skip}, nil
			}
		}
		if (b[0] == '[' || b[0] == '{') && isContainer(b) {
			s.doc, s.docLine = newDocument(bytes.NewReader(b), s.line), s.line
			continue
		}
		return s.unwrap(b, s.line, 0, want), nil
	}
}

// unwrap reads the audit event of a record.
func (s *Source) unwrap(rec []byte, line, index int, want Want) Entry {
	e := Entry{Line: line, Index: index}
	e.Unwrapped, e.Skip = Unwrap(rec)
	if e.Skip == nil {
		e.Event, e.Skip = Parse(e.Unwrapped.Event, want)
	}
	return e
}

// isContainer reports whether a line is a JSON document of records: an
// array, or an object with an array of events or records.
func isContainer(b []byte) bool {
	if b[0] == '[' {
		return true
	}
	var c struct {
		Events, Records json.RawMessage
	}
	if json.Unmarshal(b, &c) != nil {
		return false
	}
	return bytes.HasPrefix(c.Events, []byte("[")) || bytes.HasPrefix(c.Records, []byte("["))
}

// containerKeys name the arrays of records in an object: CloudWatch Logs'
// events (filter-log-events, get-log-events), Azure storage's records (its
// blobs before November 2018).
var containerKeys = map[string]bool{"events": true, "records": true}

// document yields the records of a stream of JSON values (see above).
type document struct {
	dec  *json.Decoder
	idx  *lineIndex
	n    int
	pull func() (json.RawMessage, int, bool)
	stop func()
	err  error
}

func newDocument(r io.Reader, firstLine int) *document {
	idx := &lineIndex{r: r, lines: max(firstLine-1, 0)}
	d := &document{dec: json.NewDecoder(idx), idx: idx}
	d.dec.UseNumber()
	d.pull, d.stop = iter.Pull2(d.walk)
	return d
}

// next returns the next record, the line it starts on and its number.
func (d *document) next() (json.RawMessage, int, int, error) {
	rec, line, ok := d.pull()
	if !ok {
		d.stop()
		if d.err != nil {
			return nil, 0, 0, d.err
		}
		return nil, 0, 0, io.EOF
	}
	d.n++
	return rec, line, d.n, nil
}

// walk yields each record of the stream with its line; it stops at the
// first damage, which it leaves in d.err.
func (d *document) walk(yield func(json.RawMessage, int) bool) {
	for {
		line := d.startLine()
		tok, err := d.dec.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			d.fail(err, line)
			return
		}
		switch tok {
		case json.Delim('['):
			if !d.array(yield) {
				return
			}
		case json.Delim('{'):
			if !d.object(yield, line) {
				return
			}
		default:
			d.err = &DocumentError{Line: line, Err: fmt.Errorf("a JSON %T where a record or an array of records was expected", tok)}
			return
		}
		d.idx.release(d.dec.InputOffset())
	}
}

// array yields the records of an array whose '[' was read; false when the
// walk must stop.
func (d *document) array(yield func(json.RawMessage, int) bool) bool {
	for d.dec.More() {
		line := d.startLine()
		var rec json.RawMessage
		if err := d.dec.Decode(&rec); err != nil {
			d.fail(err, line)
			return false
		}
		d.idx.release(d.dec.InputOffset())
		if !yield(rec, line) {
			return false
		}
	}
	if _, err := d.dec.Token(); err != nil { // ']'
		d.fail(err, d.startLine())
		return false
	}
	return true
}

// object reads an object whose '{' was read: a container whose arrays of
// records it yields, else a record it yields whole.
func (d *document) object(yield func(json.RawMessage, int) bool, line int) bool {
	var whole bytes.Buffer
	whole.WriteByte('{')
	streamed := false
	for d.dec.More() {
		tok, err := d.dec.Token()
		if err != nil {
			d.fail(err, d.startLine())
			return false
		}
		key, _ := tok.(string)
		if containerKeys[key] && d.peek() == '[' {
			if _, err := d.dec.Token(); err != nil {
				d.fail(err, d.startLine())
				return false
			}
			if !d.array(yield) {
				return false
			}
			streamed = true
			continue
		}
		valueLine := d.startLine()
		var v json.RawMessage
		if err := d.dec.Decode(&v); err != nil {
			d.fail(err, valueLine)
			return false
		}
		if !streamed {
			if whole.Len() > 1 {
				whole.WriteByte(',')
			}
			k, _ := json.Marshal(key)
			whole.Write(k)
			whole.WriteByte(':')
			whole.Write(v)
		}
	}
	if _, err := d.dec.Token(); err != nil { // '}'
		d.fail(err, d.startLine())
		return false
	}
	if streamed {
		return true
	}
	whole.WriteByte('}')
	return yield(whole.Bytes(), line)
}

// peek returns the next byte of the stream that is not white space or a
// colon, without consuming it.
func (d *document) peek() byte {
	d.dec.More() // reads ahead past white space
	return d.idx.byteAfter(d.dec.InputOffset(), " \t\r\n:,")
}

// startLine is the line of the next value of the stream.
func (d *document) startLine() int {
	d.dec.More()
	return d.idx.lineAfter(d.dec.InputOffset(), " \t\r\n:,")
}

// fail records damage met at line.
func (d *document) fail(err error, line int) {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		if l := d.idx.lineAt(se.Offset); l > 0 {
			line = l
		}
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || se != nil {
		d.err = &DocumentError{Line: line, Err: err}
		return
	}
	d.err = err // the reader's: a truncated gzip stream
}

// lineIndex passes a stream through, keeping what was read since the
// start of the current record so that offsets can be turned into lines.
type lineIndex struct {
	r      io.Reader
	chunks []chunk
	off    int64 // bytes read
	lines  int   // newlines read
}

type chunk struct {
	off   int64
	lines int // newlines before it
	data  []byte
}

func (x *lineIndex) Read(p []byte) (int, error) {
	n, err := x.r.Read(p)
	if n > 0 {
		x.chunks = append(x.chunks, chunk{off: x.off, lines: x.lines, data: bytes.Clone(p[:n])})
		x.off += int64(n)
		x.lines += bytes.Count(p[:n], []byte{'\n'})
	}
	return n, err
}

// release forgets what was read before off.
func (x *lineIndex) release(off int64) {
	i := 0
	for i < len(x.chunks)-1 && x.chunks[i].off+int64(len(x.chunks[i].data)) <= off {
		i++
	}
	if i > 0 {
		x.chunks = append(x.chunks[:0], x.chunks[i:]...)
	}
}

// lineAt is the line of the byte at off, 0 if it is no longer kept.
func (x *lineIndex) lineAt(off int64) int {
	for _, c := range x.chunks {
		if off >= c.off && off < c.off+int64(len(c.data)) {
			return c.lines + bytes.Count(c.data[:off-c.off], []byte{'\n'}) + 1
		}
	}
	if off == x.off {
		return x.lines + 1
	}
	return 0
}

// lineAfter is the line of the first byte at or after off that is not in
// skip.
func (x *lineIndex) lineAfter(off int64, skip string) int {
	for ; off < x.off; off++ {
		if !bytes.ContainsRune([]byte(skip), rune(x.byteAt(off))) {
			break
		}
	}
	return max(x.lineAt(off), 1)
}

// byteAfter is the first byte at or after off that is not in skip, 0 if
// none was read.
func (x *lineIndex) byteAfter(off int64, skip string) byte {
	for ; off < x.off; off++ {
		if c := x.byteAt(off); !bytes.ContainsRune([]byte(skip), rune(c)) {
			return c
		}
	}
	return 0
}

func (x *lineIndex) byteAt(off int64) byte {
	for _, c := range x.chunks {
		if off >= c.off && off < c.off+int64(len(c.data)) {
			return c.data[off-c.off]
		}
	}
	return 0
}
