package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/term"
)

// chatScreen is where `parley chat` prints and reads: lines of output
// (events, notices) and the lines typed. Everything printed is one whole
// line whose user text was escaped (eventText, termSafe) before it got here.
//
// On a terminal (newTTYScreen) the input is edited on a prompt line kept
// below the output by golang.org/x/term, with the terminal in raw mode: a
// line printed while the user types appears above the prompt, and a line
// typed is erased from the screen once entered, so it is shown once, when
// the room's feed delivers it in its place in the room's order. Otherwise
// (newPlainScreen: a pipe, a file, a test) lines are read as they come and
// output is written as it is.
type chatScreen struct {
	// mu serialises everything written. On a terminal the reading
	// goroutine holds it except while it waits for input, so a line
	// printed never lands between a line being entered and its erasure.
	mu  sync.Mutex
	out io.Writer // the terminal's line editor, or the plain output

	in     io.Reader      // plain: standard input
	term   *term.Terminal // terminal: the line editor; nil when plain
	raw    io.Writer      // terminal: the terminal itself, under the editor
	size   func() (width, height int, err error)
	width  int    // terminal: the width the editor was last told
	prompt string // terminal: the editor's prompt
	closed bool   // terminal: the chat is over; no more prompts
}

// newPlainScreen returns a screen over standard streams that are not both a
// terminal.
func newPlainScreen(in io.Reader, out io.Writer) *chatScreen {
	return &chatScreen{in: in, out: out}
}

// newTTYScreen returns a screen over rw, a terminal already in raw mode,
// prompting with prompt; size reports its size (nil: 80 columns).
func newTTYScreen(rw io.ReadWriter, prompt string, size func() (int, int, error)) *chatScreen {
	s := &chatScreen{raw: rw, size: size, width: 80, prompt: prompt}
	s.term = term.NewTerminal(ttyIO{rw: rw, mu: &s.mu}, prompt)
	s.out = s.term
	return s
}

// ttyIO is the line editor's view of the terminal: reading gives up the
// screen's lock for as long as it waits, so output can be printed, and takes
// it back before the editor handles what was typed.
type ttyIO struct {
	rw io.ReadWriter
	mu *sync.Mutex
}

func (t ttyIO) Read(p []byte) (int, error) {
	t.mu.Unlock()
	defer t.mu.Lock()
	return t.rw.Read(p)
}

func (t ttyIO) Write(p []byte) (int, error) { return t.rw.Write(p) }

// interactive reports whether the screen is a terminal that can be asked
// questions.
func (s *chatScreen) interactive() bool { return s.term != nil }

// printf prints one or more whole lines.
func (s *chatScreen) printf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.out, format, args...)
}

// setPrompt changes the prompt of the lines typed next (a terminal's
// only). The prompt must be plain text: the erasure of entered lines counts
// its runes as its width.
func (s *chatScreen) setPrompt(prompt string) {
	if s.term == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prompt = prompt
	s.term.SetPrompt(prompt)
}

// readLines sends each line typed on lines and closes it at the end of the
// input: end of file, or on a terminal Ctrl-D on an empty line or Ctrl-C.
// It may outlive the chat, blocked on a read.
func (s *chatScreen) readLines(lines chan<- string) {
	defer close(lines)
	if s.term == nil {
		sc := bufio.NewScanner(s.in)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			lines <- strings.TrimRight(sc.Text(), "\r")
		}
		return
	}
	s.mu.Lock()
	for {
		s.fitWidth()
		line, err := s.term.ReadLine()
		if err == nil {
			s.eraseEntered(line)
		}
		s.mu.Unlock()
		if err != nil && !errors.Is(err, term.ErrPasteIndicator) {
			return
		}
		lines <- line
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
	}
}

// close takes the prompt off a terminal screen at the end of the chat, so
// that what is printed next (the shell's prompt, an error) starts on a clean
// line.
func (s *chatScreen) close() {
	if s.term == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	fmt.Fprint(s.raw, "\r\x1b[K")
}

// fitWidth tells the line editor the terminal's width, which it wraps the
// prompt line at. Called with mu held.
func (s *chatScreen) fitWidth() {
	if s.size == nil {
		return
	}
	if w, h, err := s.size(); err == nil && w > 0 && w != s.width {
		s.width = w
		_ = s.term.SetSize(w, h)
	}
}

// eraseEntered removes from the screen the prompt line just entered with
// line on it, which the line editor leaves above the cursor: it takes
// (prompt + line) / width + 1 rows, as the editor moves to a new row when
// the text fills one exactly. Called with mu held, so that nothing was
// printed since.
func (s *chatScreen) eraseEntered(line string) {
	n := utf8.RuneCountInString(s.prompt) + utf8.RuneCountInString(line)
	rows := n/max(s.width, 1) + 1
	fmt.Fprintf(s.raw, "\x1b[%dA\r\x1b[J", rows)
}

// ask prints question and returns the answer typed, trimmed; "" at the end
// of the input. Only for a terminal screen, before readLines starts: the
// editor reads the answer.
func (s *chatScreen) ask(question string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.term.SetPrompt(question)
	defer s.term.SetPrompt(s.prompt)
	line, err := s.term.ReadLine()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(line)
}

// askPassword asks for a password without showing it; "" at the end of the
// input. Only for a terminal screen, before readLines starts.
func (s *chatScreen) askPassword(prompt string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	pw, err := s.term.ReadPassword(prompt)
	if err != nil {
		return ""
	}
	return pw
}
