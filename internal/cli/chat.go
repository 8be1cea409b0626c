package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"

	"github.com/parley-chat/parley/client"
)

// runChat is `parley chat ROOM`.
func runChat(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var history int
	var create bool
	fs := newFlagSet(path, "ROOM [flags]", `
Chat in ROOM from the terminal: join it, show its recent history, then
print new events as they come and post every line typed. A ROOM that does
not exist is created after asking (y/N) on a terminal, or with --create;
otherwise the chat ends, so that a typo creates nothing.

Plain text is always a message. Commands start with a slash:

`+chatCommandsHelp()+`
A line that is nothing but the name of a command without its slash
("help", "quit", "who", ...) is not posted: the chat asks whether the
command was meant (/say posts it). The uppercase words of the TUM seed
(WSP, ACTIVE, PUT, GET, HELP, QUIT, and DEL) still work as their slash
commands, as they were never posted; but PUT KEY without a value is
refused, no longer a delete.

The moderation commands act on the room chatted in, as "parley room"
kick, ban, mute, role, invite, settings and moderation do; the server
decides who may (the owner, moderators and admins; /mod and /unmod: the
owner or an admin) and a refusal shows as its message. USER may be
written @USER. A DURATION is whole seconds written as 90s, 10m or 2h30m;
after /ban USER, a word starting with a digit is read as the DURATION
(without one the ban is for good). /modlog shows the latest 20 moderation
events; "parley room moderation ROOM" shows them all.

On a terminal, the line being typed stays on a prompt below the room's
events, and a line entered is shown once, as the room's event. Text others
chose is printed with the characters a terminal would act on escaped.

When the node the chat talks to fails, it switches to another node of the
cluster (the nodes are learned at start from GET /api/v1/cluster), prints a
one-line notice and resumes after the last event shown, so nothing is
missed or shown twice. When the session ends (signed out on any node,
revoked or expired) the chat stops with "session ended: sign in again"
instead. End of input (Ctrl-D, or Ctrl-C on a terminal) is /quit as well.`)
	addClientFlags(fs, &co)
	fs.IntVar(&history, "history", 20, "show this many past `events` on joining a room (0 to 500)")
	fs.BoolVar(&create, "create", false, "create ROOM (and rooms /join names) as a public room when there is none, without asking")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	if history < 0 || history > 500 {
		return usagef(path, "--history %d: want 0 to 500", history)
	}
	s := newChatSession(e, &co, pos[0], history, create)
	if in, ok := e.Stdin.(*os.File); ok && isTerminal(e.Stdin) && isTerminalWriter(e.Stdout) {
		restore, err := rawTerminal(in)
		if err != nil {
			return err
		}
		defer restore()
		out := e.Stdout.(*os.File)
		s.screen = newTTYScreen(struct {
			io.Reader
			io.Writer
		}{in, out}, "> ", func() (int, int, error) { return term.GetSize(int(out.Fd())) })
		defer s.screen.close() // before restore
	}
	if err := s.start(ctx, &co); err != nil {
		return err
	}
	return s.loop(ctx)
}

// rawTerminal puts the terminal f into raw mode for the line editor and
// returns the function that restores it.
func rawTerminal(f *os.File) (restore func(), err error) {
	old, err := term.MakeRaw(int(f.Fd()))
	if err != nil {
		return nil, fmt.Errorf("set up the terminal: %w", err)
	}
	return func() { _ = term.Restore(int(f.Fd()), old) }, nil
}

// chatSession is one `parley chat`: the room, the nodes it may talk to, and
// the last seq it printed.
type chatSession struct {
	e        *Env
	screen   *chatScreen
	token    string
	timeout  time.Duration
	history  int  // events shown on joining a room
	create   bool // --create: make missing rooms without asking
	openFeed feedOpener
	// clientOf makes the client of a node (--ca-file applies).
	clientOf func(server, token string) *client.Client

	// room is the room chatted in, "" after /leave; lastSeq the last of
	// its events printed (or skipped as hidden). The command loop changes
	// room only while no follow runs.
	room      string
	lastSeq   atomic.Uint64
	following *following
	// confirm, when set, takes the next line typed as the answer to a
	// question the chat asked (y/N).
	confirm func(ctx context.Context, yes bool) error

	mu      sync.Mutex
	servers []string // base URLs of the cluster's nodes; servers[cur] is in use
	cur     int
	c       *client.Client
}

// following is the goroutine printing the room's events.
type following struct {
	cancel context.CancelFunc
	done   chan error
}

// newChatSession returns a chat of room on co's server, printing to a
// plain screen over e's standard streams.
func newChatSession(e *Env, co *clientOptions, room string, history int, create bool) *chatSession {
	return &chatSession{
		e: e, screen: newPlainScreen(e.Stdin, e.Stdout), room: room, token: co.Token, timeout: co.Timeout,
		history: history, create: create, openFeed: newStreamFeed, clientOf: co.clientOf,
		servers: append([]string{strings.TrimRight(co.Server, "/")}, co.fallbacks...), c: co.newClient(),
	}
}

// start joins the room (creating it when missing and allowed), learns the
// cluster's nodes and prints the recent history.
func (s *chatSession) start(ctx context.Context, co *clientOptions) error {
	r, err := s.join(ctx, s.room, "")
	if ce, ok := errors.AsType[*client.Error](err); ok && ce.Status == 403 && s.screen.interactive() {
		if pw := s.screen.askPassword(fmt.Sprintf("Password for room %s: ", termSafe(s.room))); pw != "" {
			r, err = s.join(ctx, s.room, pw)
		}
	}
	if isNotFound(err) {
		switch {
		case s.create:
		case s.screen.interactive():
			if !isYes(s.screen.ask(fmt.Sprintf("There is no room %s. Create it? (y/N) ", termSafe(s.room)))) {
				return fmt.Errorf("no room %s: nothing created", termSafe(s.room))
			}
		default:
			return fmt.Errorf("no room %s; check its name, or create it with --create", termSafe(s.room))
		}
		r, err = s.createRoom(ctx, s.room)
	}
	if ce, ok := errors.AsType[*client.Error](err); ok && ce.Status == 403 {
		return fmt.Errorf("%s; join it first with: parley room join %s", describe(err), termSafe(s.room))
	}
	if err != nil {
		return err
	}
	s.learnNodes(ctx, co)
	if err := s.enter(ctx, r); err != nil {
		return err
	}
	s.printf("-- joined %s on %s (%s, %s known). Type /help for commands, /quit to leave.\n",
		termSafe(r.Name), s.servers[0], plural(r.Members, "member"), plural(len(s.servers), "node"))
	return nil
}

// join joins room with password.
func (s *chatSession) join(ctx context.Context, room, password string) (client.Room, error) {
	var r client.Room
	err := s.do(ctx, true, func(ctx context.Context, c *client.Client) (err error) {
		r, err = c.JoinRoom(ctx, room, password)
		return err
	})
	return r, err
}

// createRoom creates the public room room.
func (s *chatSession) createRoom(ctx context.Context, room string) (client.Room, error) {
	var r client.Room
	err := s.do(ctx, true, func(ctx context.Context, c *client.Client) (err error) {
		r, err = c.CreateRoom(ctx, client.RoomSpec{Name: room})
		return err
	})
	if err == nil {
		s.printf("-- created room %s\n", termSafe(r.Name))
	}
	return r, err
}

// enter makes r, a room joined, the room chatted in: it prints the room's
// recent history and prompts with its name. The loop starts its follow.
func (s *chatSession) enter(ctx context.Context, r client.Room) error {
	s.room = r.Name
	s.lastSeq.Store(r.LastSeq)
	s.screen.setPrompt(termSafe(r.Name) + "> ")
	if s.history == 0 {
		return nil
	}
	var evs []client.Event
	err := s.do(ctx, false, func(ctx context.Context, c *client.Client) (err error) {
		evs, err = c.History(ctx, r.Name, client.HistoryOptions{Limit: s.history})
		return err
	})
	if err != nil {
		return err
	}
	for _, ev := range evs {
		s.show(ev)
	}
	return nil
}

// isNotFound reports whether err is the server's 404.
func isNotFound(err error) bool {
	ce, ok := errors.AsType[*client.Error](err)
	return ok && ce.Status == 404
}

// isYes reports whether an answer to a y/N question is yes.
func isYes(answer string) bool {
	a := strings.ToLower(strings.TrimSpace(answer))
	return a == "y" || a == "yes"
}

// plural renders n things: "1 node", "3 nodes".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// containsFold reports whether list holds s, ignoring case.
func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// loop reads commands while the room's events are printed, until /quit,
// end of input, the end of ctx, or a failure of the feed that no other node
// can mend.
func (s *chatSession) loop(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.startFollow(ctx)
	lines := make(chan string)
	go s.screen.readLines(lines) // may outlive the chat, blocked on a read
	for {
		var feedDone chan error
		if s.following != nil {
			feedDone = s.following.done
		}
		select {
		case <-ctx.Done():
			return s.stopFollow()
		case err := <-feedDone:
			s.following = nil
			return err
		case line, ok := <-lines:
			if !ok || s.handleLine(ctx, line) {
				err := s.stopFollow()
				s.printf("-- bye\n")
				return err
			}
		}
	}
}

// startFollow starts printing the events of the room chatted in, if any,
// until ctx ends or stopFollow.
func (s *chatSession) startFollow(ctx context.Context) {
	if s.room == "" {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	f := &following{cancel: cancel, done: make(chan error, 1)}
	room := s.room
	go func() { f.done <- s.follow(ctx, room) }()
	s.following = f
}

// stopFollow stops printing the room's events and returns the error that
// ended the follow, nil when it was stopped.
func (s *chatSession) stopFollow() error {
	f := s.following
	if f == nil {
		return nil
	}
	s.following = nil
	f.cancel()
	return <-f.done
}

// show prints one event for the chat, "[TIME #SEQ] ..." (the seq is the N
// of /edit N, /reply N...); whispers between others are not shown, and a
// mention (in any room) is shown as it comes.
func (s *chatSession) show(ev client.Event) {
	switch ev.Kind {
	case "hidden":
		return
	case "mention":
		s.printf("[%s] -- %s mentioned you in %s (#%d)\n", clock(ev.Ts), termSafe(ev.Sender), termSafe(ev.Room), ev.Seq)
		return
	}
	s.printf("[%s #%d] %s\n", clock(ev.Ts), ev.Seq, eventText(ev))
}

// printf prints a line of chat output.
func (s *chatSession) printf(format string, args ...any) {
	s.screen.printf(format, args...)
}
