package app

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// completionCommand is `podtrace completion bash|zsh|fish`: a script the
// shell sources, kubectl's way. The bash and zsh scripts ask podtrace
// itself for the words (urfave/cli's --generate-bash-completion: commands,
// then a command's flags); fish's lists them all.
func completionCommand(streams Streams) *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script: bash, zsh or fish",
		ArgsUsage: "bash|zsh|fish",
		Description: "  source <(podtrace completion bash)        # in ~/.bashrc\n" +
			"  source <(podtrace completion zsh)         # in ~/.zshrc\n" +
			"  podtrace completion fish | source         # in ~/.config/fish/config.fish",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("completion takes one shell: bash, zsh or fish, e.g. source <(podtrace completion bash)")
			}
			switch shell := c.Args().First(); shell {
			case "bash":
				_, err := fmt.Fprint(streams.Out, strings.ReplaceAll(bashCompletion, "PROG", "podtrace"))
				return err
			case "zsh":
				_, err := fmt.Fprint(streams.Out, strings.ReplaceAll(zshCompletion, "PROG", "podtrace"))
				return err
			case "fish":
				s, err := c.App.ToFishCompletion()
				if err != nil {
					return fmt.Errorf("fish completion: %w", err)
				}
				_, err = fmt.Fprint(streams.Out, s)
				return err
			default:
				return usagef("completion: unknown shell %q: want bash, zsh or fish", shell)
			}
		},
	}
}

// bashCompletion is urfave/cli's autocomplete/bash_autocomplete, for PROG.
const bashCompletion = `# bash completion for PROG: source <(PROG completion bash)
_PROG_bash_complete() {
  local cur words cword
  COMPREPLY=()
  cur="${COMP_WORDS[COMP_CWORD]}"
  words=("${COMP_WORDS[@]:0:$COMP_CWORD}")
  local opts
  if [[ "$cur" == "-"* ]]; then
    opts=$("${words[@]}" "$cur" --generate-bash-completion 2>/dev/null)
  else
    opts=$("${words[@]}" --generate-bash-completion 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "${opts}" -- "${cur}"))
  return 0
}
complete -o bashdefault -o default -F _PROG_bash_complete PROG
`

// zshCompletion is urfave/cli's autocomplete/zsh_autocomplete, for PROG.
const zshCompletion = `#compdef PROG
# zsh completion for PROG: source <(PROG completion zsh)
_PROG_zsh_complete() {
  local -a opts
  local cur
  cur=${words[-1]}
  if [[ "$cur" == "-"* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} ${cur} --generate-bash-completion 2>/dev/null)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion 2>/dev/null)}")
  fi
  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}
compdef _PROG_zsh_complete PROG
`
