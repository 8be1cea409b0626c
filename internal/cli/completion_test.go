package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestCompletion_Tree(t *testing.T) {
	tree := completionTree(context.Background())
	byPath := map[string]completionNode{}
	for _, n := range tree {
		byPath[n.path] = n
	}
	if n := byPath["parley cluster"]; !strings.Contains(strings.Join(n.subs, " "), "wait") {
		t.Errorf("parley cluster subcommands %q lack wait", n.subs)
	}
	for path, flag := range map[string]string{"parley serve": "--join-token-file", "parley kv put": "--ca-file", "parley cluster wait": "--replicated", "parley health": "--live"} {
		if !strings.Contains(" "+strings.Join(byPath[path].flags, " ")+" ", " "+flag+" ") {
			t.Errorf("%s flags %q lack %s", path, byPath[path].flags, flag)
		}
	}
}

func TestCompletion_Usage(t *testing.T) {
	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}} {
		if r := run(context.Background(), nil, "", args...); r.code != 2 {
			t.Errorf("%q: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
}

// mustScript writes the completion script of shell to a file and returns
// its path; the test is skipped when the shell is not installed.
func mustScript(t *testing.T, shell string) string {
	t.Helper()
	if _, err := exec.LookPath(shell); err != nil {
		t.Skip("no " + shell)
	}
	script := filepath.Join(t.TempDir(), "parley."+shell)
	if err := os.WriteFile(script, []byte(mustRun(t, context.Background(), "completion", shell)), 0o600); err != nil {
		t.Fatal(err)
	}
	return script
}

// TestCompletion_Bash loads the bash script and asks it to complete.
func TestCompletion_Bash(t *testing.T) {
	script := mustScript(t, "bash")
	for line, want := range map[string]string{
		"parley clu":               "cluster",
		"parley cluster w":         "wait",
		"parley cluster token rot": "rotate",
		"parley kv put mykey --se": "--server",
		"parley --server x kv g":   "get",
		"parley serve --join-tok":  "--join-token --join-token-file",
	} {
		words := strings.Fields(line)
		cmd := exec.Command("bash", "-c", `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _parley; echo "${COMPREPLY[*]}"`, "bash", script)
		cmd.Args = append(cmd.Args, words...)
		out, err := cmd.CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != want {
			t.Errorf("completing %q: %q (%v), want %q", line, got, err, want)
		}
	}
}

// TestCompletion_Syntax has each shell that is installed parse its script.
func TestCompletion_Syntax(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			script := mustScript(t, shell)
			if out, err := exec.Command(shell, "-n", script).CombinedOutput(); err != nil {
				t.Errorf("%s -n: %v\n%s", shell, err, out)
			}
		})
	}
}

// TestCompletion_ZshFish asks the zsh and fish scripts to complete, where
// those shells are installed (zsh through stand-ins for compadd and
// _files, fish through complete -C).
func TestCompletion_ZshFish(t *testing.T) {
	cases := map[string]string{"parley cluster w": "wait", "parley kv put key --ti": "--timeout", "parley clu": "cluster"}
	for _, shell := range []string{"zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			script := mustScript(t, shell)
			for line, want := range cases {
				words := strings.Fields(line)
				var cmd *exec.Cmd
				if shell == "zsh" {
					cmd = exec.Command("zsh", "-c", `compdef() {}; source "$1"; shift
compadd() { shift; print -l -- "$@" | grep -- "^${PREFIX}" }
words=("$@"); CURRENT=$#; PREFIX=${words[-1]}; _parley`, "zsh", script)
					cmd.Args = append(cmd.Args, words...)
				} else {
					cmd = exec.Command("fish", "-c", `source $argv[1]; complete -C $argv[2]`, script, line)
				}
				out, err := cmd.CombinedOutput()
				got := strings.Fields(string(out))
				if err != nil || len(got) == 0 || got[0] != want {
					t.Errorf("completing %q: %q (%v), want %q", line, out, err, want)
				}
			}
		})
	}
}
