package auditlog

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// tailFixture is an audit log in a temp dir and a Tailer on it.
type tailFixture struct {
	t     *testing.T
	path  string
	tail  *Tailer
	warns []string
}

func newTailFixture(t *testing.T, content string, fromStart bool) *tailFixture {
	t.Helper()
	fx := &tailFixture{t: t, path: filepath.Join(t.TempDir(), "audit.log")}
	fx.write(content)
	tl, err := NewTailer(TailOptions{Path: fx.path, FromStart: fromStart, Warn: func(s string) { fx.warns = append(fx.warns, s) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tl.Close() })
	fx.tail = tl
	return fx
}

// write creates or replaces the file at the path.
func (fx *tailFixture) write(content string) {
	fx.t.Helper()
	if err := os.WriteFile(fx.path, []byte(content), 0o644); err != nil {
		fx.t.Fatal(err)
	}
}

// appendTo appends to a file, as the API server does.
func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// poll runs one Poll and returns the lines it passed on.
func (fx *tailFixture) poll() []string {
	fx.t.Helper()
	var got []string
	if err := fx.tail.Poll(func(b []byte) error { got = append(got, string(b)); return nil }); err != nil {
		fx.t.Fatalf("poll: %v", err)
	}
	return got
}

func (fx *tailFixture) want(what string, want ...string) {
	fx.t.Helper()
	if diff := cmp.Diff(want, fx.poll()); diff != "" {
		fx.t.Errorf("%s: lines (-want +got):\n%s", what, diff)
	}
}

func TestTailAppend(t *testing.T) {
	fx := newTailFixture(t, "old 1\nold 2\n", false)
	fx.want("at start (the end of the file)")
	appendTo(t, fx.path, "new 1\nnew 2\n")
	fx.want("after an append", "new 1", "new 2")
	fx.want("nothing new")
	appendTo(t, fx.path, "new 3\n")
	fx.want("after a second append", "new 3")
	if st := fx.tail.Stats(); st.Lines != 3 || st.Rotations != 0 || st.Truncations != 0 {
		t.Errorf("stats %+v, want 3 lines, no rotation or truncation", st)
	}
}

func TestTailFromStart(t *testing.T) {
	fx := newTailFixture(t, "old 1\nold 2\n", true)
	fx.want("from the start", "old 1", "old 2")
}

func TestTailStartsMidLine(t *testing.T) {
	// The API server is writing a line when the tailer starts: the rest
	// of that line is not a whole event.
	fx := newTailFixture(t, "old 1\n{\"half", false)
	appendTo(t, fx.path, " of it\"}\nnew 1\n")
	fx.want("after the line being written ends", "new 1")
}

func TestTailPartialLineHeld(t *testing.T) {
	fx := newTailFixture(t, "", false)
	appendTo(t, fx.path, "whole\n{\"kind\":")
	fx.want("a line without its newline is held", "whole")
	appendTo(t, fx.path, "\"Event\"")
	fx.want("still no newline")
	appendTo(t, fx.path, "}\nnext\n")
	fx.want("the line completed", `{"kind":"Event"}`, "next")
}

func TestTailRenameRotation(t *testing.T) {
	fx := newTailFixture(t, "", false)
	appendTo(t, fx.path, "a 1\n")
	fx.want("before rotation", "a 1")

	// kube-apiserver (lumberjack) renames the log and creates a new one.
	// A line written to the old file just before the rename is still read,
	// and so is a last line without newline.
	appendTo(t, fx.path, "a 2\na 3")
	rotated := filepath.Join(filepath.Dir(fx.path), "audit-2026-01-02T03-04-05.000.log")
	if err := os.Rename(fx.path, rotated); err != nil {
		t.Fatal(err)
	}
	fx.want("renamed, no new file yet", "a 2")
	fx.write("b 1\nb 2\n")
	fx.want("the new file", "a 3", "b 1", "b 2")
	appendTo(t, rotated, "late\n")
	appendTo(t, fx.path, "b 3\n")
	fx.want("appends go on in the new file only", "b 3")
	if st := fx.tail.Stats(); st.Rotations != 1 || st.Lines != 6 {
		t.Errorf("stats %+v, want 1 rotation, 6 lines", st)
	}
	if len(fx.warns) != 0 {
		t.Errorf("warnings for a normal rotation: %q", fx.warns)
	}
}

func TestTailCopyTruncate(t *testing.T) {
	fx := newTailFixture(t, "", false)
	appendTo(t, fx.path, "a 1 a long line\na 2 a long line\n")
	fx.want("before truncation", "a 1 a long line", "a 2 a long line")
	// logrotate copytruncate: the content is copied elsewhere and the file
	// truncated in place; the writer goes on writing at the new end.
	if err := os.Truncate(fx.path, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, fx.path, "b 1\n")
	fx.want("after truncation", "b 1")
	appendTo(t, fx.path, "b 2\n")
	fx.want("after truncation, appended", "b 2")
	if st := fx.tail.Stats(); st.Truncations != 1 || st.Rotations != 0 {
		t.Errorf("stats %+v, want 1 truncation, no rotation", st)
	}
}

func TestTailMissingFile(t *testing.T) {
	_, err := NewTailer(TailOptions{Path: filepath.Join(t.TempDir(), "audit.log")})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v, want one matching fs.ErrNotExist", err)
	}
}

func TestTailVanishedAndBack(t *testing.T) {
	fx := newTailFixture(t, "", false)
	fx.tail.grace = 0
	if err := os.Remove(fx.path); err != nil {
		t.Fatal(err)
	}
	fx.want("gone")
	fx.want("still gone")
	if len(fx.warns) != 1 || !strings.Contains(fx.warns[0], "is gone") {
		t.Fatalf("warnings %q, want one that says the log is gone", fx.warns)
	}
	fx.write("c 1\n")
	fx.want("back", "c 1")
	if len(fx.warns) != 2 || !strings.Contains(fx.warns[1], "is back") {
		t.Errorf("warnings %q, want a second that says it is back", fx.warns)
	}
}

func TestTailRunDrainsOnStop(t *testing.T) {
	fx := newTailFixture(t, "", false)
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var got []string
	done := make(chan error, 1)
	go func() {
		done <- fx.tail.Run(ctx, time.Hour, func(b []byte) error {
			mu.Lock()
			got = append(got, string(b))
			mu.Unlock()
			return nil
		})
	}()
	// Whether the first poll or the last (on stop) reads them, the whole
	// lines are passed on and the unfinished one is not.
	time.Sleep(50 * time.Millisecond)
	appendTo(t, fx.path, "x 1\nx 2\nunfinished")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"x 1", "x 2"}, got); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	if st := fx.tail.Stats(); st.Dropped != 1 {
		t.Errorf("dropped %d lines, want the unfinished one", st.Dropped)
	}
	if len(fx.warns) != 1 || !strings.Contains(fx.warns[0], "no newline") {
		t.Errorf("warnings %q, want one about the unfinished line", fx.warns)
	}
}
