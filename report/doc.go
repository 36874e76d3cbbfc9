// Package report renders replayed pod lifecycles for people: the text of
// `podtrace diff` and `podtrace explain`, a summary of a whole trace in text
// and markdown, and one self-contained HTML file to attach to a ticket.
//
// report never talks to an API server and never opens a trace: it renders
// what diff.Replay produced. Every string from the cluster is data: the HTML
// report escapes it with html/template and embeds it as JSON, never as markup.
package report
