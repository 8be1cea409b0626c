package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
)

// flagSet is a flag.FlagSet that also fills flags from environment
// variables (a flag given on the command line wins over its variable, which
// wins over the default), accepts flags among positional arguments, hides
// test-only flags from the help, and reports problems as values instead of
// printing them.
type flagSet struct {
	*flag.FlagSet
	path     string            // "parley serve"
	synopsis string            // "KEY VALUE [flags]"
	about    string            // paragraph printed under the synopsis
	env      map[string]string // flag name -> environment variable
	hidden   map[string]bool
	// config is the value of --config when the command takes a
	// configuration file (withConfigFile).
	config *string
}

// newFlagSet returns an empty flagSet for the command at path.
func newFlagSet(path, synopsis, about string) *flagSet {
	fs := flag.NewFlagSet(path, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flagSet{FlagSet: fs, path: path, synopsis: synopsis, about: about, env: map[string]string{}, hidden: map[string]bool{}}
}

// bindEnv makes the environment variable env the fallback of flag name.
func (f *flagSet) bindEnv(name, env string) {
	if f.Lookup(name) == nil {
		panic("cli: bindEnv on undefined flag " + name) // a wiring mistake
	}
	f.env[name] = env
}

// bindAllEnv binds every flag defined so far that has no variable yet to
// prefix + the flag's name in upper case with '-' as '_':
// --data-dir -> PARLEY_DATA_DIR.
func (f *flagSet) bindAllEnv(prefix string) {
	f.VisitAll(func(fl *flag.Flag) {
		if _, ok := f.env[fl.Name]; !ok {
			f.env[fl.Name] = prefix + strings.ToUpper(strings.ReplaceAll(fl.Name, "-", "_"))
		}
	})
}

// hide keeps flag name out of the help text (test-only tuning).
func (f *flagSet) hide(name string) { f.hidden[name] = true }

// parse parses args, letting flags and positional arguments mix ("--" ends
// the flags), then fills every flag not given from its environment
// variable. It returns the positional arguments. -h yields a *helpError
// carrying the help text; every other problem a *usageError.
func (f *flagSet) parse(args []string, getenv func(string) string) ([]string, error) {
	var pos []string
	for {
		if err := f.FlagSet.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, &helpError{text: f.help()}
			}
			return nil, &usageError{path: f.path, err: doubleDash(err)}
		}
		rest := f.Args()
		used := len(args) - len(rest)
		if used > 0 && args[used-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	if err := f.applyEnv(getenv); err != nil {
		return nil, &usageError{path: f.path, err: err}
	}
	if f.config != nil && *f.config != "" {
		if err := f.applyConfigFile(*f.config); err != nil {
			return nil, &usageError{path: f.path, err: err}
		}
	}
	return pos, nil
}

// doubleDash rewrites the flag package's "-name" in err as "--name", the
// spelling the help uses.
func doubleDash(err error) error {
	msg := err.Error()
	for _, p := range []string{"flag -", "defined: -", "argument: -"} {
		msg = strings.Replace(msg, p, p+"-", 1)
	}
	return errors.New(msg)
}

// applyEnv sets each flag that the command line left alone from its
// environment variable, when that is set and not empty.
func (f *flagSet) applyEnv(getenv func(string) string) error {
	if getenv == nil {
		return nil
	}
	given := map[string]bool{}
	f.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	names := make([]string, 0, len(f.env))
	for name := range f.env {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		env := f.env[name]
		v := getenv(env)
		if given[name] || v == "" {
			continue
		}
		if err := f.Set(name, v); err != nil {
			return fmt.Errorf("invalid value %q in $%s for flag --%s: %v", v, env, name, err)
		}
	}
	return nil
}

// help returns the command's help: synopsis, description and every visible
// flag with its default (unless its usage states it) and environment
// variable.
func (f *flagSet) help() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s %s\n", f.path, f.synopsis)
	if f.about != "" {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimSpace(f.about))
	}
	first := true
	f.VisitAll(func(fl *flag.Flag) {
		if f.hidden[fl.Name] {
			return
		}
		if first {
			b.WriteString("\nFlags:\n")
			first = false
		}
		typ, usage := flag.UnquoteUsage(fl)
		dash := "--"
		if len(fl.Name) == 1 {
			dash = "-"
		}
		fmt.Fprintf(&b, "  %s%s", dash, fl.Name)
		if typ != "" {
			fmt.Fprintf(&b, " %s", typ)
		}
		fmt.Fprintf(&b, "\n      %s", usage)
		// A usage that explains its default itself ("(default $PARLEY_SERVER
		// or http://localhost:7070)") is not given it a second time.
		if fl.DefValue != "" && fl.DefValue != "0" && fl.DefValue != "false" && fl.DefValue != "0s" && !strings.Contains(usage, "(default") {
			fmt.Fprintf(&b, " (default %s)", fl.DefValue)
		}
		if env, ok := f.env[fl.Name]; ok {
			fmt.Fprintf(&b, " [$%s]", env)
		}
		b.WriteByte('\n')
	})
	return b.String()
}

// listValue is a string list flag: repeatable, each value split on commas.
// The first value from the command line replaces the default.
type listValue struct {
	list *[]string
	set  bool
}

// newListValue returns a listValue that stores into p, starting from def.
func newListValue(p *[]string, def []string) *listValue {
	*p = def
	return &listValue{list: p}
}

// String implements flag.Value.
func (v *listValue) String() string {
	if v == nil || v.list == nil {
		return ""
	}
	return strings.Join(*v.list, ",")
}

// Set implements flag.Value.
func (v *listValue) Set(s string) error {
	if !v.set {
		*v.list = nil
		v.set = true
	}
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*v.list = append(*v.list, part)
		}
	}
	return nil
}

// levelValue is a slog level flag: debug, info, warn or error.
type levelValue struct{ level *slog.Level }

// String implements flag.Value.
func (v levelValue) String() string {
	if v.level == nil {
		return ""
	}
	return strings.ToLower(v.level.String())
}

// Set implements flag.Value.
func (v levelValue) Set(s string) error {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return errors.New("want debug, info, warn or error")
	}
	*v.level = l
	return nil
}

// choiceValue is a string flag restricted to a few values.
type choiceValue struct {
	p       *string
	choices []string
}

// newChoiceValue returns a choiceValue storing into p, starting from def.
func newChoiceValue(p *string, def string, choices ...string) *choiceValue {
	*p = def
	return &choiceValue{p: p, choices: choices}
}

// String implements flag.Value.
func (v *choiceValue) String() string {
	if v == nil || v.p == nil {
		return ""
	}
	return *v.p
}

// Set implements flag.Value.
func (v *choiceValue) Set(s string) error {
	if !slices.Contains(v.choices, s) {
		return fmt.Errorf("want %s", strings.Join(v.choices, ", "))
	}
	*v.p = s
	return nil
}

// given reports whether flag name was set on the command line or from its
// environment variable.
func given(fs *flagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
