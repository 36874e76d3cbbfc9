// Package otlptest is an OTLP/HTTP receiver of traces for tests: it keeps
// what it is sent and renders it as text.
package otlptest
