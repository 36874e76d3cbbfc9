// Package jaeger runs a real Jaeger v2 for tests: the binary hack/build-jaeger.sh
// builds from the Go module proxy (make jaeger), with in-memory storage, its
// OTLP receivers (gRPC and HTTP) and its query API on free loopback ports,
// and reads back what it stored through that query API.
package jaeger
