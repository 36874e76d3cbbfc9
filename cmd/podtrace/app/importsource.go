package app

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/podtrace/podtrace/tracer/auditlog"
)

// stdinLog is the --audit-log value that names standard input.
const stdinLog = "-"

// auditInput is one file to import.
type auditInput struct {
	path string // as named or found; stdinLog for standard input
	// inDir: found in a directory named with --audit-log. A file there
	// that holds no audit event is skipped with a warning (a directory of
	// downloaded blobs holds other files too); a file named on its own
	// must be an audit log.
	inDir bool
}

// name is how messages name the input.
func (in auditInput) name() string {
	if in.path == stdinLog {
		return "standard input"
	}
	return in.path
}

// expandLogs lists the files the --audit-log values name: a file as is, a
// directory's regular files at any depth in lexical order (rotated and
// gzip files, a provider's tree of blobs), standard input for "-".
func expandLogs(logs []string) ([]auditInput, error) {
	var out []auditInput
	for _, l := range logs {
		if l == stdinLog {
			out = append(out, auditInput{path: l})
			continue
		}
		fi, err := os.Stat(l)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			out = append(out, auditInput{path: l})
			continue
		}
		n := len(out)
		err = filepath.WalkDir(l, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() {
				out = append(out, auditInput{path: p, inDir: true})
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read directory %s: %w", l, err)
		}
		if len(out) == n {
			return nil, fmt.Errorf("directory %s holds no file", l)
		}
	}
	return out, nil
}

// openInput opens an input, gunzipping it when it is gzip. counted, when
// not nil, counts the bytes read from the file. A damaged gzip header is
// an error that matches gzip.ErrHeader.
func openInput(in auditInput, stdin io.Reader, counted *int64) (io.Reader, func(), error) {
	var f io.Reader = stdin
	closeFile := func() {}
	if in.path != stdinLog {
		file, err := os.Open(in.path)
		if err != nil {
			return nil, nil, err
		}
		f, closeFile = file, func() { file.Close() }
	}
	if counted != nil {
		f = countingReader{f, counted}
	}
	br := bufio.NewReaderSize(f, 256<<10)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			closeFile()
			return nil, nil, fmt.Errorf("%w (%v)", gzip.ErrHeader, err)
		}
		return zr, func() { zr.Close(); closeFile() }, nil
	}
	return br, closeFile, nil
}

// errNoAuditEvent says a file holds no audit event.
var errNoAuditEvent = errors.New("no audit event")

// checkAuditLog fails if no record of the file is an audit event (of any
// audit.k8s.io version, as kube-apiserver writes it or in a known export:
// a damaged or older log is warned about record by record, not refused).
// It reads up to the first event: the first record of an audit log.
func checkAuditLog(in auditInput, warn io.Writer) error {
	r, closeLog, err := openInput(in, nil, nil)
	if errors.Is(err, gzip.ErrHeader) {
		return nil // importFile counts and warns about it
	}
	if err != nil {
		return err
	}
	defer closeLog()
	src := auditlog.NewSource(r)
	empty := true
	for {
		e, err := src.Next(nil)
		if err != nil {
			if err != io.EOF {
				return nil // damage: importFile counts and warns about it
			}
			break
		}
		if e.Skip == nil || e.Skip.Reason != "empty line" {
			empty = false
		}
		if e.Unwrapped.Event != nil && auditlog.IsEvent(e.Unwrapped.Event) {
			return nil
		}
	}
	if empty {
		fmt.Fprintf(warn, "podtrace: warning: %s is empty\n", in.name())
		return nil
	}
	return fmt.Errorf("%s is not a kube-apiserver audit log: first line is %q; podtrace import reads the JSON lines of audit.k8s.io/v1 Events that the API server writes to its --audit-log-path, or their export by GKE (Cloud Logging entries), EKS (CloudWatch Logs events, S3 export) or AKS (diagnostic logs in a storage account, Log Analytics rows)", in.name(), firstLine(in))
}

// firstLine returns the first line of a file that is not empty, cut to 80
// bytes.
func firstLine(in auditInput) []byte {
	r, closeLog, err := openInput(in, nil, nil)
	if err != nil {
		return nil
	}
	defer closeLog()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), auditlog.MaxLine)
	for sc.Scan() {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if len(b) > 80 {
			b = append(b[:77:77], "..."...)
		}
		return bytes.Clone(b)
	}
	return nil
}

// fileSummary says what one file held and what the import kept of it.
type fileSummary struct {
	shape   string
	records int
	formats map[auditlog.Format]int // records that held an audit event
	kept    int
	lacks   map[string]int // fields the export did not carry, over the kept events
}

func newFileSummary(shape string) *fileSummary {
	return &fileSummary{shape: shape, formats: map[auditlog.Format]int{}, lacks: map[string]int{}}
}

// lacksText says what the fields an export does not carry are, for the
// import's summary.
var lacksText = map[string]string{
	"responseStatus.code":      "HTTP status code",
	"responseStatus":           "outcome (no status at all)",
	"requestObject":            "request body",
	"responseObject":           "response body",
	"impersonatedUser":         "impersonated user (an impersonating request reads as its impersonator's)",
	"requestReceivedTimestamp": "time the request was received (its one timestamp is read as the time it completed)",
	"user":                     "user",
}

// String writes the summary's line about the file: "FILE: JSON document,
// 42 records (GKE Cloud Logging entry 40): 12 kept; its format does not
// carry: HTTP status code (9 of the 12)...".
func (s *fileSummary) String(name string) string {
	var formats []string
	for f, n := range s.formats {
		formats = append(formats, fmt.Sprintf("%s: %d", f, n))
	}
	sort.Strings(formats)
	what := "no audit event"
	if len(formats) > 0 {
		what = strings.Join(formats, ", ")
	}
	unit := "line"
	if s.shape != "JSON lines" {
		unit = "record"
	}
	line := fmt.Sprintf("  %s: %s, %s (%s): %d kept", name, s.shape, plural(s.records, unit), what, s.kept)
	if len(s.lacks) > 0 {
		var lacks []string
		for f, n := range s.lacks {
			text := lacksText[f]
			if text == "" {
				text = f
			}
			lacks = append(lacks, fmt.Sprintf("%s (%d of the %d)", text, n, s.kept))
		}
		sort.Strings(lacks)
		line += "; its format does not carry: " + strings.Join(lacks, "; ")
	}
	return line
}
