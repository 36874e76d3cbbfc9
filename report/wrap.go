package report

import (
	"io"
	"regexp"
	"unicode/utf8"
)

// wrapWriter wraps the lines written through it at width columns, for a
// terminal: at spaces, each continuation indented under the text it
// continues (see hang). A word longer than the width (an image digest, a
// URL) stays whole. ANSI colour sequences take no column. A line without
// its newline waits for it, or for flush.
type wrapWriter struct {
	w       io.Writer
	width   int
	pending []byte
	out     []byte
}

func (ww *wrapWriter) Write(p []byte) (int, error) {
	ww.pending = append(ww.pending, p...)
	start := 0
	ww.out = ww.out[:0]
	for i := 0; i < len(ww.pending); i++ {
		if ww.pending[i] == '\n' {
			ww.out = appendWrapped(ww.out, ww.pending[start:i], ww.width)
			ww.out = append(ww.out, '\n')
			start = i + 1
		}
	}
	ww.pending = append(ww.pending[:0], ww.pending[start:]...)
	if len(ww.out) > 0 {
		if _, err := ww.w.Write(ww.out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// flush writes what waits for its newline.
func (ww *wrapWriter) flush() error {
	if len(ww.pending) == 0 {
		return nil
	}
	out := appendWrapped(nil, ww.pending, ww.width)
	ww.pending = ww.pending[:0]
	_, err := ww.w.Write(out)
	return err
}

// Where a continuation line starts, after the line's indentation:
// under the text of an evidence or timeline line ("04:30:05.675 #20
// text"), after a label ("next: ", "actor: ", "A: "), else four columns in.
var (
	clockPrefix = regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3}\s+(#\d+\s+)?`)
	labelPrefix = regexp.MustCompile(`^[A-Za-z][a-zA-Z ]{0,20}: `)
)

// hang is the column a continuation of plain (the line without colour)
// starts at.
func hang(plain []byte, width int) int {
	indent := 0
	for indent < len(plain) && plain[indent] == ' ' {
		indent++
	}
	rest := plain[indent:]
	h := indent + 4
	if m := clockPrefix.Find(rest); m != nil {
		h = indent + len(m)
	} else if m := labelPrefix.Find(rest); m != nil {
		h = indent + len(m)
	}
	return min(h, width/2)
}

// appendWrapped appends line, wrapped at width columns.
func appendWrapped(dst, line []byte, width int) []byte {
	if width <= 0 || visibleWidth(line) <= width {
		return append(dst, line...)
	}
	plain := stripANSI(line)
	h := hang(plain, width)
	col := 0
	lineStart := len(dst)
	lastSpace := -1 // in dst, the index of the last space a break may replace
	inText := false // past the line's indentation
	for i := 0; i < len(line); {
		if line[i] == 0x1b {
			j := ansiEnd(line, i)
			dst = append(dst, line[i:j]...)
			i = j
			continue
		}
		r, n := utf8.DecodeRune(line[i:])
		if r == ' ' && inText && col >= h {
			lastSpace = len(dst)
		}
		if r != ' ' {
			inText = true
		}
		if col >= width && r != ' ' && lastSpace > lineStart {
			// Break at the last space: the word begun after it goes on.
			tail := append([]byte(nil), dst[lastSpace+1:]...)
			dst = trimRightSpaces(dst[:lastSpace])
			dst = append(dst, '\n')
			lineStart = len(dst)
			for range h {
				dst = append(dst, ' ')
			}
			dst = append(dst, tail...)
			col = h + visibleWidth(tail)
			lastSpace = -1
		}
		dst = append(dst, line[i:i+n]...)
		col++
		i += n
	}
	return dst
}

func trimRightSpaces(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == ' ' {
		b = b[:len(b)-1]
	}
	return b
}

// ansiEnd is the index after the escape sequence that starts at i.
func ansiEnd(b []byte, i int) int {
	j := i + 1
	if j < len(b) && b[j] == '[' {
		j++
		for j < len(b) && (b[j] < 0x40 || b[j] > 0x7e) {
			j++
		}
		if j < len(b) {
			j++
		}
	}
	return j
}

func stripANSI(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		if b[i] == 0x1b {
			i = ansiEnd(b, i)
			continue
		}
		out = append(out, b[i])
		i++
	}
	return out
}

// visibleWidth counts the columns of b: its runes, colour sequences aside.
func visibleWidth(b []byte) int {
	n := 0
	for i := 0; i < len(b); {
		if b[i] == 0x1b {
			i = ansiEnd(b, i)
			continue
		}
		_, size := utf8.DecodeRune(b[i:])
		i += size
		n++
	}
	return n
}
