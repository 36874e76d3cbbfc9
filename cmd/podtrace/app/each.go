package app

import (
	"fmt"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/store"
)

// ExplainEach replays and explains every pod incarnation recorded in the
// trace at path, in the order they were first recorded, and hands each to
// fn with its revisions kept and nothing redacted (for explain.Check: the
// e2e tests run it on every trace they record). It stops at fn's first
// error.
func ExplainEach(path string, fn func(*explain.Lifecycle) error) error {
	db, err := openTrace(path)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, found, err := scanTrace(db, store.ObjectFilter{Kind: "Pod"})
	if err != nil {
		return err
	}
	tc, err := newContext(db, ctx)
	if err != nil {
		return err
	}
	for _, p := range found[0] {
		in, err := loadInput(db, tc, p)
		if err != nil {
			return err
		}
		lc, err := explain.Replay(in, diff.Options{})
		if err != nil {
			return fmt.Errorf("replay pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		if err := fn(lc); err != nil {
			return err
		}
	}
	return nil
}
