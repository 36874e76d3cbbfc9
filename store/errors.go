package store

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// Sentinel errors returned by Open, NewWriter and the queries; check them
// with errors.Is. A missing trace file is reported with an error for which
// errors.Is(err, fs.ErrNotExist) holds.
var (
	// ErrNewerSchema: the trace was written by a newer podtrace whose layout
	// this build does not know.
	ErrNewerSchema = errors.New("trace written by a newer podtrace")
	// ErrCorrupt: the file is not a podtrace trace, or it is damaged.
	ErrCorrupt = errors.New("trace file is not a podtrace trace or is corrupt")
	// ErrLocked: another process holds the file and did not release it in
	// time (a recorder that keeps it open, or a reader when writing).
	ErrLocked = errors.New("trace file is locked by another process")
	// ErrNotFound: no object with the UID asked for is in the trace.
	ErrNotFound = errors.New("object not found in trace")
	// ErrRecording: a live recorder (a Writer) holds the trace's lock file,
	// so a second writer is refused. See Recorder.
	ErrRecording = errors.New("trace is being recorded by another recorder")
	// ErrClosed: the Writer was closed; it writes no more.
	ErrClosed = errors.New("the writer is closed")
	// ErrInvalidRecord: a record cannot be written as it is (no UID, no
	// kind, no object): writing it again fails again.
	ErrInvalidRecord = errors.New("invalid record")
)

// traceError is an error with a message written for the user, that
// errors.Is matches against a sentinel (kind) and that unwraps to its cause.
type traceError struct {
	msg  string
	kind error
	err  error
}

func (e *traceError) Error() string        { return e.msg }
func (e *traceError) Is(target error) bool { return target == e.kind }
func (e *traceError) Unwrap() error        { return e.err }

func newError(kind, cause error, format string, args ...any) error {
	return &traceError{msg: fmt.Sprintf(format, args...), kind: kind, err: cause}
}

func notExistError(path string, cause error) error {
	return newError(fs.ErrNotExist, cause, "no trace file %q: record one with `podtrace record --db FILE`", path)
}

func recordingError(path, lpath string, l Lease) error {
	return newError(ErrRecording, nil,
		"trace %q is being recorded by %s (lock %s): stop that recorder, or record into another file with -o",
		path, l, lpath)
}

// createError is a writer's failure to create a missing trace, or its lock
// file, in a directory it cannot write.
func createError(path string, cause error) error {
	return fmt.Errorf("cannot create trace %q: %w; choose a writable directory with -o", path, cause)
}

func emptyError(path string) error {
	return newError(ErrCorrupt, nil,
		"%q is empty, not a podtrace trace: remove it (a writer creates the trace), or name a new file", path)
}

// damagedError is a trace that bbolt's check finds damaged: a writer does
// not add to it.
func damagedError(path string, cause error) error {
	return newError(ErrCorrupt, cause,
		"trace %q is damaged, podtrace will not write into it (%v): record into a new file (--db NEW), and keep this one as it is for inspection (`bbolt check %s` lists the damaged pages; podtrace cannot salvage it: export, diff and report stop at the first damaged page they read)",
		path, firstLine(cause), path)
}

// firstLine is the first of an error's lines (errors.Join's), with how many
// more there are.
func firstLine(err error) string {
	msg := err.Error()
	first, rest, ok := strings.Cut(msg, "\n")
	if !ok {
		return msg
	}
	return fmt.Sprintf("%s; and %d more problems", first, strings.Count(rest, "\n")+1)
}

func corruptError(path string, cause error) error {
	return newError(ErrCorrupt, cause, "%q is not a podtrace trace or is corrupt: %v", path, cause)
}

func newerSchemaError(path string, schema uint64) error {
	return newError(ErrNewerSchema, nil,
		"trace %q was written by a newer podtrace (schema %d, this build reads up to %d): upgrade podtrace",
		path, schema, SchemaVersion)
}
