// Package cli is Parley's command line: `parley serve`, `parley dev`, the
// client commands (`parley kv`, `parley cluster`, ...) and `parley bench`,
// and the command line of parley-bench, the peer benchmarks (peerbench.go).
// It is the only package that defines flags. Each command parses its flags
// into an options struct (ParseServe, ParseDev, ParseBenchKV) apart from the
// function that runs it (Serve, Dev, BenchKV), so tests can skip flag
// parsing.
//
// Exit codes: 0 success (and -h), 1 failure, 2 usage error. Failures print
// one line, "error: <message> (<code>)", on standard error.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/parley-chat/parley/client"
)

// Env is the process environment a command runs in. Main builds it from
// the real process; tests build their own.
type Env struct {
	// Stdin is read by commands that take "-" for a value.
	Stdin io.Reader
	// Stdout receives command output.
	Stdout io.Writer
	// Stderr receives logs, progress and errors.
	Stderr io.Writer
	// Getenv looks up environment variables; nil means none are set.
	Getenv func(string) string

	// login is set by client commands: whom to suggest signing in as when
	// the server answers 401.
	login *loginHint
	// terminal, when set, reports whether standard output is a terminal in place
	// of asking the operating system (tests).
	terminal func(w io.Writer) bool
}

// getenv looks up key, treating a nil Getenv as an empty environment.
func (e *Env) getenv(key string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(key)
}

// Main runs the parley command line with args (without the program name)
// and returns the process exit code. The first SIGINT or SIGTERM cancels
// the command's context, which servers take as the order to shut down
// gracefully; a second one kills the process.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return withSignals(ctx, func(ctx context.Context) int {
		return Run(ctx, &Env{Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: os.Getenv}, args)
	})
}

// withSignals calls run with a context that the first SIGINT or SIGTERM
// cancels; a second one kills the process.
func withSignals(ctx context.Context, run func(context.Context) int) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // restore default handling: a second signal ends the process
	}()
	return run(ctx)
}

// Run dispatches args to a command and returns the exit code. It installs
// no signal handlers: cancelling ctx stops servers gracefully.
func Run(ctx context.Context, e *Env, args []string) int {
	return e.exit(rootCommand().run(ctx, e, "parley", args))
}

// exit prints err as the command line's final word and returns the exit
// code.
func (e *Env) exit(err error) int {
	if err == nil {
		return 0
	}
	if h, ok := errors.AsType[*helpError](err); ok {
		fmt.Fprint(e.Stdout, h.text)
		return 0
	}
	if u, ok := errors.AsType[*usageError](err); ok {
		if u.help != "" {
			fmt.Fprint(e.Stderr, u.help)
			return 2
		}
		fmt.Fprintf(e.Stderr, "error: %s\n", safeMessage(oneLine(u.err.Error())))
		fmt.Fprintf(e.Stderr, "run '%s -h' for usage\n", u.path)
		return 2
	}
	fmt.Fprintf(e.Stderr, "error: %s%s\n", describe(err), e.login.advice(err))
	return 1
}

// describe renders err as "<message> (<code>)" for server errors and a
// plain one-line message otherwise.
func describe(err error) string {
	if ce, ok := errors.AsType[*client.Error](err); ok {
		msg, code := ce.Message, ce.Code
		if msg == "" {
			msg = http.StatusText(ce.Status)
		}
		if code == "" {
			code = strconv.Itoa(ce.Status)
		}
		return fmt.Sprintf("%s (%s)", safeMessage(oneLine(msg)), safeMessage(code))
	}
	if ue, ok := errors.AsType[*url.Error](err); ok && !errors.Is(err, context.Canceled) {
		host := ue.URL
		if u, perr := url.Parse(ue.URL); perr == nil {
			host = u.Scheme + "://" + u.Host
		}
		return fmt.Sprintf("cannot reach %s: %s (unreachable)", safeMessage(host), safeMessage(oneLine(ue.Err.Error())))
	}
	return safeMessage(oneLine(err.Error()))
}

// oneLine joins the lines of a (possibly joined) error message.
func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")
}

// helpError carries help text the user asked for with -h; it ends the
// command with exit code 0.
type helpError struct{ text string }

// Error implements error.
func (h *helpError) Error() string { return "help requested" }

// usageError is a mistake in the command line: exit code 2.
type usageError struct {
	path string // the command whose usage applies, e.g. "parley kv put"
	err  error
	help string // when set, printed instead of err: the command's help
}

// Error implements error.
func (u *usageError) Error() string { return u.err.Error() }

// Unwrap returns the underlying problem.
func (u *usageError) Unwrap() error { return u.err }

// usagef returns a *usageError for the command at path.
func usagef(path, format string, args ...any) error {
	return &usageError{path: path, err: fmt.Errorf(format, args...)}
}
