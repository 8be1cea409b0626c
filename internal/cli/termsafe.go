package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/parley-chat/parley/internal/text"
)

// Every line the command line prints that holds text others chose (names,
// messages, URLs, values shown as text, server messages) goes through
// termSafe, termSafeLines or jsonTermSafe, whatever the server accepted:
// data stored before the server refused control characters, KV values and
// queue bodies may hold anything. Only byte-exact output of a value
// (kv get, queue receive and peek) to something that is not a terminal is
// written raw, so that redirecting it to a file or a pipe keeps every byte.

// termSafe returns s with everything a terminal could act on escaped
// (text.Escape): control characters as \xNN, bidirectional formatting as
// \uNNNN, bytes that are not UTF-8 as \xNN, and the backslash as \\.
func termSafe(s string) string { return text.Escape(s) }

// messageIndent starts the continuation lines of a multi-line message, so
// that none can pass for a line of its own.
const messageIndent = "    "

// termSafeLines is termSafe for a message shown on its own lines: newlines
// stay, each followed by messageIndent, and tabs stay.
func termSafeLines(s string) string { return text.EscapeLines(s, messageIndent) }

// safeMessage escapes a server's error message only when it holds a
// character a terminal would act on, so that ordinary messages keep their
// backslashes as they are.
func safeMessage(s string) string {
	if strings.IndexFunc(s, text.Unsafe) < 0 && utf8.ValidString(s) {
		return s
	}
	return termSafe(s)
}

// jsonTermSafe escapes, inside JSON text, the characters encoding/json
// leaves raw that a terminal could act on (DEL, C1, bidirectional
// formatting): each becomes its \uNNNN escape, which decodes to the same
// string. Outside strings JSON is ASCII, so only strings change.
func jsonTermSafe(b []byte) []byte {
	var out bytes.Buffer
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError && r >= 0x7f && text.Unsafe(r) {
			fmt.Fprintf(&out, `\u%04x`, r)
		} else {
			out.Write(b[i : i+size])
		}
		i += size
	}
	return out.Bytes()
}

// stdoutIsTerminal reports whether the command's standard output is a
// terminal (Env.terminal decides in tests).
func (e *Env) stdoutIsTerminal() bool {
	if e.terminal != nil {
		return e.terminal(e.Stdout)
	}
	return isTerminalWriter(e.Stdout)
}

// isTerminalWriter reports whether w is a terminal.
func isTerminalWriter(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && f != nil && term.IsTerminal(int(f.Fd()))
}

// writeValue writes a stored value (a KV value, a queue body) to standard
// output: byte for byte when it is not a terminal, so that a redirect to a
// file or a pipe keeps every byte; escaped (termSafeLines) on a terminal,
// so that a value cannot drive it. It adds newline when it is set.
func writeValue(e *Env, value []byte, newline bool) error {
	if e.stdoutIsTerminal() {
		value = []byte(termSafeLines(string(value)))
	}
	if newline {
		value = append(value, '\n')
	}
	_, err := e.Stdout.Write(value)
	return err
}
