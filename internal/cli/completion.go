package cli

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// runCompletion is `parley completion SHELL`.
func runCompletion(ctx context.Context, e *Env, path string, args []string) error {
	fs := newFlagSet(path, "bash|zsh|fish", `
Print a shell completion script for parley: its commands, and each command's
flags. Load it in the current shell, or install it:

  bash:  source <(parley completion bash)
         parley completion bash > /etc/bash_completion.d/parley
  zsh:   source <(parley completion zsh)
         parley completion zsh > "${fpath[1]}/_parley"
  fish:  parley completion fish | source
         parley completion fish > ~/.config/fish/completions/parley.fish`)
	pos, err := fs.parse(args, e.getenv)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef(path, "want one shell: bash, zsh or fish")
	}
	tree := completionTree(ctx)
	switch pos[0] {
	case "bash":
		return writeBashCompletion(e.Stdout, tree)
	case "zsh":
		return writeZshCompletion(e.Stdout, tree)
	case "fish":
		return writeFishCompletion(e.Stdout, tree)
	}
	return usagef(path, "unknown shell %q: want bash, zsh or fish", pos[0])
}

// completionNode is one command of the tree as completion sees it: a
// group's subcommands, or a leaf's flags.
type completionNode struct {
	path  string   // "parley kv put"
	subs  []string // a group's subcommand names
	flags []string // a leaf's flags, with their dashes: "--server", "-v"
}

// helpFlagRE picks the flags out of a command's help.
var helpFlagRE = regexp.MustCompile(`(?m)^  (--?[a-z][a-z0-9-]*)`)

// completionTree walks the command tree; each leaf's flags are read from its
// own help, so they are exactly what the command accepts.
func completionTree(ctx context.Context) []completionNode {
	var out []completionNode
	var walk func(c *command, path string)
	walk = func(c *command, path string) {
		n := completionNode{path: path}
		if c.subs == nil {
			help := ""
			env := &Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard}
			if h, ok := c.action(ctx, env, path, []string{"-h"}).(*helpError); ok {
				help = h.text
			}
			n.flags = []string{"-h"}
			for _, m := range helpFlagRE.FindAllStringSubmatch(help, -1) {
				n.flags = append(n.flags, m[1])
			}
			out = append(out, n)
			return
		}
		for _, s := range c.subs {
			n.subs = append(n.subs, s.name)
		}
		if path == "parley" {
			n.subs = append(n.subs, "--version", "--help")
		}
		out = append(out, n)
		for _, s := range c.subs {
			walk(s, path+" "+s.name)
		}
	}
	walk(rootCommand(), "parley")
	return out
}

// writeBashCompletion writes the bash script: the command path is the
// words that name subcommands, skipping flags, their values and
// arguments.
func writeBashCompletion(w io.Writer, tree []completionNode) error {
	var b strings.Builder
	b.WriteString("# bash completion for parley (parley completion bash)\n")
	writeCompletionTables(&b, tree, "declare -gA _parley_subs=(\n", ")\ndeclare -gA _parley_flags=(\n", "  [%q]=%q\n")
	b.WriteString(`)
_parley() {
  local cur=${COMP_WORDS[COMP_CWORD]} node=parley w i
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
    [[ $w == -* ]] && continue
    if [[ -n ${_parley_subs["$node $w"]} || -n ${_parley_flags["$node $w"]} ]]; then
      node="$node $w"
    fi
  done
  if [[ -n ${_parley_subs[$node]} ]]; then
    COMPREPLY=($(compgen -W "${_parley_subs[$node]}" -- "$cur"))
  elif [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "${_parley_flags[$node]}" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -F _parley parley
`)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeZshCompletion writes the zsh script, the same walk as bash's.
func writeZshCompletion(w io.Writer, tree []completionNode) error {
	var b strings.Builder
	b.WriteString("#compdef parley\n# zsh completion for parley (parley completion zsh)\n")
	writeCompletionTables(&b, tree, "typeset -gA _parley_subs _parley_flags\n_parley_subs=(\n", ")\n_parley_flags=(\n", "  %q %q\n")
	b.WriteString(`)
_parley() {
  local node=parley w i
  for (( i = 2; i < CURRENT; i++ )); do
    w=${words[i]}
    [[ $w == -* ]] && continue
    if [[ -n ${_parley_subs[$node $w]} || -n ${_parley_flags[$node $w]} ]]; then
      node="$node $w"
    fi
  done
  if [[ -n ${_parley_subs[$node]} ]]; then
    compadd -- ${=_parley_subs[$node]}
  elif [[ $PREFIX == -* ]]; then
    compadd -- ${=_parley_flags[$node]}
  else
    _files
  fi
}
compdef _parley parley
`)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeCompletionTables writes the two tables of the bash and zsh scripts:
// after subsHead each group's path and subcommands, after flagsHead each
// leaf's path and flags, one row of format each (path, then the words).
func writeCompletionTables(b *strings.Builder, tree []completionNode, subsHead, flagsHead, row string) {
	b.WriteString(subsHead)
	for _, n := range tree {
		if n.subs != nil {
			fmt.Fprintf(b, row, n.path, strings.Join(n.subs, " "))
		}
	}
	b.WriteString(flagsHead)
	for _, n := range tree {
		if n.subs == nil {
			fmt.Fprintf(b, row, n.path, strings.Join(n.flags, " "))
		}
	}
}

// writeFishCompletion writes the fish script: __parley_path finds the
// command path the same way, and each completion is conditioned on it.
func writeFishCompletion(w io.Writer, tree []completionNode) error {
	var b strings.Builder
	b.WriteString("# fish completion for parley (parley completion fish)\nset -g __parley_nodes")
	for _, n := range tree {
		fmt.Fprintf(&b, " %s", fishQuote(n.path))
	}
	b.WriteString(`
function __parley_path
    set -l node parley
    for w in (commandline -opc)[2..-1]
        string match -q -- '-*' $w; and continue
        contains -- "$node $w" $__parley_nodes; and set node "$node $w"
    end
    echo $node
end
complete -c parley -f
`)
	for _, n := range tree {
		cond := fishQuote("test (__parley_path) = " + fishQuote(n.path))
		if n.subs != nil {
			fmt.Fprintf(&b, "complete -c parley -n %s -a %s\n", cond, fishQuote(strings.Join(n.subs, " ")))
			continue
		}
		fmt.Fprintf(&b, "complete -c parley -n %s -F", cond)
		for _, f := range n.flags {
			if strings.HasPrefix(f, "--") {
				fmt.Fprintf(&b, " -l %s", f[2:])
			} else {
				fmt.Fprintf(&b, " -o %s", f[1:])
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fishQuote quotes s for fish in single quotes.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
