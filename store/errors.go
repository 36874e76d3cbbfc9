package store

import (
	"errors"
	"fmt"
	"io/fs"
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
	return newError(fs.ErrNotExist, cause, "no trace file %q: record one with `podtrace record -o FILE`", path)
}

func corruptError(path string, cause error) error {
	return newError(ErrCorrupt, cause, "%q is not a podtrace trace or is corrupt: %v", path, cause)
}

func newerSchemaError(path string, schema uint64) error {
	return newError(ErrNewerSchema, nil,
		"trace %q was written by a newer podtrace (schema %d, this build reads up to %d): upgrade podtrace",
		path, schema, SchemaVersion)
}
