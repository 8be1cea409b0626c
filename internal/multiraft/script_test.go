package multiraft

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "write the outputs the script commands printed back into their files")

// scriptCase is one command of a script and the output it must print.
type scriptCase struct {
	line      int               // 1-based line of the command
	cmd       string            // the command's first word
	args      map[string]string // key=value words; a bare word is a key with value ""
	want      string            // expected output, lines joined with \n
	wantStart int               // 0-based index of the first output line in the file
	wantEnd   int               // one past the last output line
}

// arg returns the value of key, or def when the command does not name it.
func (c *scriptCase) arg(key, def string) string {
	if v, ok := c.args[key]; ok {
		return v
	}
	return def
}

// runScript runs a script in the style of etcd raft's data-driven tests. A
// case is a command line (a command word, then key=value or bare words),
// a line "----", and the output the command must print, up to a blank line
// or the end of the file; lines starting with # between cases are comments.
// run answers one case with its output. With -rewrite, the file is written
// back with the outputs printed instead of failing on a difference.
func runScript(t *testing.T, path string, run func(c *scriptCase) string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	cases, err := parseScript(lines)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var got []string
	for i := range cases {
		c := &cases[i]
		out := strings.TrimRight(run(c), "\n")
		got = append(got, out)
		if out != c.want && !*rewrite {
			t.Fatalf("%s:%d: %s\ngot:\n%s\nwant:\n%s", path, c.line, lines[c.line-1], out, c.want)
		}
	}
	if *rewrite {
		var b strings.Builder
		next := 0
		for i, c := range cases {
			for _, l := range lines[next:c.wantStart] {
				b.WriteString(l + "\n")
			}
			if got[i] != "" {
				b.WriteString(got[i] + "\n")
			}
			next = c.wantEnd
		}
		for _, l := range lines[next:] {
			b.WriteString(l + "\n")
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// parseScript splits a script's lines into cases.
func parseScript(lines []string) ([]scriptCase, error) {
	var cases []scriptCase
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		words := strings.Fields(l)
		c := scriptCase{line: i + 1, cmd: words[0], args: map[string]string{}}
		for _, w := range words[1:] {
			k, v, _ := strings.Cut(w, "=")
			c.args[k] = v
		}
		if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != "----" {
			return nil, fmt.Errorf("line %d: %q is not followed by ----", i+1, l)
		}
		i += 2
		c.wantStart = i
		for i < len(lines) && strings.TrimSpace(lines[i]) != "" {
			i++
		}
		c.wantEnd = i
		c.want = strings.Join(lines[c.wantStart:c.wantEnd], "\n")
		cases = append(cases, c)
	}
	return cases, nil
}
