// Package layers holds, in its test, the direction podtrace's data flows:
// tracer -> store -> diff (replay) -> explain (findings) -> report / serve,
// with cmd/podtrace wiring them. No import runs back up.
package layers
