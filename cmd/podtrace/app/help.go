package app

import (
	"fmt"
	"runtime"

	"github.com/urfave/cli/v2"
)

// helpCommand is `podtrace help [COMMAND]`: the help of podtrace, or of
// one command, as --help prints it.
func helpCommand() *cli.Command {
	return &cli.Command{
		Name:      "help",
		Usage:     "show the help of podtrace, or of one command",
		ArgsUsage: "[COMMAND]",
		Action: func(c *cli.Context) error {
			switch c.NArg() {
			case 0:
				return cli.ShowAppHelp(c)
			case 1:
				name := c.Args().First()
				if findCommand(c.App.Commands, name) == nil {
					return unknownCommand(name, c.App.Commands)
				}
				return cli.ShowCommandHelp(c, name)
			}
			return usagef("help takes one command at most (got %d arguments): podtrace help explain", c.NArg())
		},
	}
}

// versionCommand is `podtrace version`, kubectl's: the version, and with
// -o json or yaml, the Go version and platform too.
func versionCommand(streams Streams) *cli.Command {
	var format string
	return &cli.Command{
		Name:  "version",
		Usage: "print podtrace's version",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "text", Destination: &format, Usage: "output format: text, json or yaml"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("version takes no arguments (got %q)", c.Args().First())
			}
			if err := checkFormat(format, "text", "json", "yaml"); err != nil {
				return err
			}
			v := struct {
				Version   string `json:"version"`
				GoVersion string `json:"goVersion"`
				Platform  string `json:"platform"`
			}{Version, runtime.Version(), runtime.GOOS + "/" + runtime.GOARCH}
			switch format {
			case "json":
				return writeJSONTo(streams.Out, v)
			case "yaml":
				return writeYAML(streams.Out, v)
			}
			_, err := fmt.Fprintf(streams.Out, "%s version %s\n", c.App.Name, v.Version)
			return err
		},
	}
}
