// Command podtrace records, replays and explains the life of Kubernetes pods.
package main

import (
	"os"

	"github.com/podtrace/podtrace/cmd/podtrace/app"
)

func main() {
	os.Exit(app.Main(os.Args, app.Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}))
}
