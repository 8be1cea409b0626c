package cli

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// configFileHelp explains the format of --config files; the help of a
// command that takes one ends with it.
const configFileHelp = `
--config FILE reads flags from FILE, one "name = value" a line, named as on
the command line without the dashes ("data-dir = /var/lib/parley"); blank
lines and lines starting with # are ignored, a value may be double-quoted,
and a repeatable flag may be given on several lines. A flag on the command
line wins over its environment variable, which wins over the file, which
wins over the default.`

// withConfigFile defines --config: a file of flag settings applied, by
// parse, to every flag that neither the command line nor an environment
// variable set.
func (f *flagSet) withConfigFile() {
	f.config = new(string)
	f.StringVar(f.config, "config", "", "`file` of flag settings, one \"name = value\" a line (flags and environment variables win over it)")
}

// applyConfigFile sets, from the file, each flag not set yet. Problems name
// the file and line.
func (f *flagSet) applyConfigFile(file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	given := map[string]bool{}
	f.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	sc := bufio.NewScanner(bytes.NewReader(b))
	for line := 1; sc.Scan(); line++ {
		name, value, ok, err := configLine(sc.Text())
		switch {
		case err != nil:
			return fmt.Errorf("%s:%d: %w", file, line, err)
		case !ok:
			continue
		case name == "config":
			return fmt.Errorf("%s:%d: a configuration file cannot name another (config)", file, line)
		case given[name]:
			continue
		case f.Lookup(name) == nil:
			return fmt.Errorf("%s:%d: unknown flag %q (run '%s -h' for the flags)", file, line, name, f.path)
		}
		if err := f.Set(name, value); err != nil {
			return fmt.Errorf("%s:%d: invalid value %q for flag --%s: %v", file, line, value, name, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("--config %s: %w", file, err)
	}
	return nil
}

// configLine parses one line of a configuration file; ok is false for a
// blank line or a comment.
func configLine(text string) (name, value string, ok bool, err error) {
	text = strings.TrimSpace(text)
	if text == "" || strings.HasPrefix(text, "#") {
		return "", "", false, nil
	}
	name, value, found := strings.Cut(text, "=")
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if !found || name == "" {
		return "", "", false, fmt.Errorf("want name = value, got %q", text)
	}
	if strings.HasPrefix(name, "-") {
		return "", "", false, fmt.Errorf("name the flag without dashes: %q", strings.TrimLeft(name, "-"))
	}
	if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
		if value, err = strconv.Unquote(value); err != nil {
			return "", "", false, fmt.Errorf("bad quoted value: %w", err)
		}
	}
	return name, value, true, nil
}
