// Package redact removes what a ticket must not carry from a replayed
// lifecycle (diff.Lifecycle) and from recorded objects: env values,
// credentials in arguments and values, the last-applied-configuration
// annotation and the user's --redact keys and patterns. Every output
// (report, podtrace diff and explain) and podtrace export apply it; diff
// never redacts, so redact sits above diff and below report:
//
//	store <- diff <- redact <- report <- cmd/podtrace
package redact
