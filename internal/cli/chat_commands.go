package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/parley-chat/parley/client"
)

// chatCommand is a command typed in the chat after a slash.
type chatCommand struct {
	name    string
	alias   string // another name, "" for none
	args    string // the arguments, for the help: "USER[,USER...] TEXT"
	help    string
	needsIn bool // needs a room chatted in
	run     func(s *chatSession, ctx context.Context, args string) (quit bool, err error)
}

// chatCommandList returns the chat's commands in the order of the help.
func chatCommandList() []chatCommand {
	return append([]chatCommand{
		{name: "who", alias: "active", help: "members of this room, and who is online", needsIn: true, run: (*chatSession).who},
		{name: "wsp", args: "USER[,USER...] TEXT", help: "whisper TEXT to these members only", needsIn: true, run: (*chatSession).whisper},
		{name: "join", args: "ROOM", help: "chat in ROOM instead (you stay a member of this one)", run: (*chatSession).joinCmd},
		{name: "leave", help: "leave this room: stop being a member of it", needsIn: true, run: (*chatSession).leave},
		{name: "rooms", help: "the rooms you can see, * marking yours", run: (*chatSession).rooms},
		{name: "put", args: "KEY VALUE", help: "store VALUE under KEY in the key-value store", run: (*chatSession).put},
		{name: "get", args: "KEY", help: "show the value stored under KEY", run: (*chatSession).get},
		{name: "del", args: "KEY", help: "delete KEY", run: (*chatSession).del},
		{name: "say", args: "TEXT", help: "post TEXT as it is, be it a command's name or start with a slash", needsIn: true, run: (*chatSession).say},
	}, append(append(chatMessageCommands(), chatModCommands()...),
		chatCommand{name: "help", help: "this list", run: (*chatSession).helpCmd},
		chatCommand{name: "quit", alias: "exit", help: "end the chat; you stay a member of the room", run: func(*chatSession, context.Context, string) (bool, error) { return true, nil }},
	)...)
}

// legacyWords are the TUM seed's uppercase command words, still accepted
// (exactly in upper case) as the commands they name: they were never posted,
// so accepting them posts nothing by mistake.
var legacyWords = map[string]string{"WSP": "wsp", "ACTIVE": "who", "PUT": "put", "GET": "get", "DEL": "del", "HELP": "help", "QUIT": "quit"}

// chatCommandsHelp lists the commands, for -h and /help.
func chatCommandsHelp() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, c := range chatCommandList() {
		also := ""
		if c.alias != "" {
			also = " (or /" + c.alias + ")"
		}
		fmt.Fprintf(tw, "  /%s %s\t%s%s\n", c.name, c.args, c.help, also)
	}
	_ = tw.Flush()
	return b.String()
}

// findChatCommand returns the command named name (without its slash, any
// case), or false.
func findChatCommand(name string) (chatCommand, bool) {
	name = strings.ToLower(name)
	for _, c := range chatCommandList() {
		if c.name == name || (c.alias != "" && c.alias == name) {
			return c, true
		}
	}
	return chatCommand{}, false
}

// parseChatLine splits a line typed into a command word (without its slash)
// and its arguments. ok is false for a message: a line not starting with a
// slash, unless its first word is one of legacyWords in upper case.
func parseChatLine(line string) (word, args string, ok bool) {
	trimmed := strings.TrimLeft(line, " \t")
	word, args, _ = strings.Cut(trimmed, " ")
	args = strings.TrimLeft(args, " \t")
	if strings.HasPrefix(word, "/") {
		return word[1:], args, true
	}
	if name, legacy := legacyWords[word]; legacy {
		return name, args, true
	}
	return "", "", false
}

// heldWord reports whether a line, that is not a command, is nothing but a
// command's name without its slash ("help", "Quit"): such a line is not
// posted, as it was most likely meant as the command.
func heldWord(line string) bool {
	w := strings.TrimSpace(line)
	if strings.ContainsAny(w, " \t") {
		return false
	}
	_, ok := findChatCommand(w)
	return ok
}

// handleLine carries out one line typed in the chat and reports whether the
// chat should end: the answer to a question the chat asked, a command, or a
// message to post. Failures are printed and the chat goes on.
func (s *chatSession) handleLine(ctx context.Context, line string) (quit bool) {
	var err error
	switch word, args, isCmd := parseChatLine(line); {
	case s.confirm != nil:
		answer := s.confirm
		s.confirm = nil
		err = answer(ctx, isYes(line))
	case strings.TrimSpace(line) == "":
	case isCmd:
		c, ok := findChatCommand(word)
		switch {
		case !ok:
			err = fmt.Errorf("unknown command /%s; /help lists them, /say posts a line starting with a slash", termSafe(word))
		case c.needsIn && s.room == "":
			err = errors.New("not in a room: /join ROOM first")
		default:
			quit, err = c.run(s, ctx, args)
		}
	case heldWord(line):
		w := strings.TrimSpace(line)
		s.printf("-- not posted: did you mean /%s? Commands start with a slash; /say %s posts the word.\n",
			strings.ToLower(termSafe(w)), termSafe(w))
	case s.room == "":
		err = errors.New("not in a room: /join ROOM first")
	default:
		err = s.post(ctx, line, nil)
	}
	if err != nil {
		s.printf("-- error: %s\n", describe(err))
	}
	return quit
}

// post posts text to the room, a whisper when to is set. The event shows
// when the feed delivers it, in its place in the room's order.
func (s *chatSession) post(ctx context.Context, text string, to []string) error {
	room := s.room
	return s.do(ctx, true, func(ctx context.Context, c *client.Client) error {
		_, err := c.Post(ctx, room, text, client.PostOptions{To: to})
		return err
	})
}

// say is `/say TEXT`: TEXT posted as it is.
func (s *chatSession) say(ctx context.Context, args string) (bool, error) {
	if strings.TrimSpace(args) == "" {
		return false, errors.New("usage: /say TEXT")
	}
	return false, s.post(ctx, args, nil)
}

// helpCmd is `/help`.
func (s *chatSession) helpCmd(context.Context, string) (bool, error) {
	s.printf("-- plain text is posted; commands:\n")
	for l := range strings.Lines(chatCommandsHelp()) {
		s.printf("-- %s", l)
	}
	return false, nil
}

// whisper is `/wsp user1,user2 message`.
func (s *chatSession) whisper(ctx context.Context, args string) (bool, error) {
	users, text, _ := strings.Cut(args, " ")
	text = strings.TrimSpace(text)
	var to []string
	for u := range strings.SplitSeq(users, ",") {
		if u = strings.TrimSpace(u); u != "" {
			to = append(to, u)
		}
	}
	if len(to) == 0 || text == "" {
		return false, errors.New("usage: /wsp USER[,USER...] TEXT")
	}
	return false, s.post(ctx, text, to)
}

// who is `/who`: the room's members, and who is online.
func (s *chatSession) who(ctx context.Context, _ string) (bool, error) {
	var ms []client.Member
	room := s.room
	err := s.do(ctx, false, func(ctx context.Context, c *client.Client) (err error) {
		ms, err = c.Members(ctx, room)
		return err
	})
	if err != nil {
		return false, err
	}
	var online, all []string
	for _, m := range ms {
		all = append(all, termSafe(m.Username))
		if m.Online {
			online = append(online, termSafe(m.Username))
		}
	}
	if len(online) == 0 {
		s.printf("-- nobody online in %s (%s: %s)\n", termSafe(room), plural(len(all), "member"), strings.Join(all, ", "))
		return false, nil
	}
	s.printf("-- online in %s (%d of %s): %s\n", termSafe(room), len(online), plural(len(all), "member"), strings.Join(online, ", "))
	return false, nil
}

// put is `/put KEY VALUE`. A put without a value is refused: deleting is
// /del's job (the TUM seed's `PUT key` deleted, a trap).
func (s *chatSession) put(ctx context.Context, args string) (bool, error) {
	key, value, _ := strings.Cut(args, " ")
	if key == "" || strings.TrimSpace(value) == "" {
		return false, errors.New("usage: /put KEY VALUE (a value is needed; /del KEY deletes)")
	}
	var version uint64
	err := s.do(ctx, true, func(ctx context.Context, c *client.Client) (err error) {
		version, err = c.KVPut(ctx, key, []byte(value), client.PutOptions{})
		return err
	})
	if err == nil {
		s.printf("-- stored %s (version %d)\n", termSafe(key), version)
	}
	return false, err
}

// del is `/del KEY`.
func (s *chatSession) del(ctx context.Context, args string) (bool, error) {
	key := strings.TrimSpace(args)
	if key == "" || strings.ContainsAny(key, " \t") {
		return false, errors.New("usage: /del KEY")
	}
	err := s.do(ctx, true, func(ctx context.Context, c *client.Client) error {
		return c.KVDelete(ctx, key, client.DeleteOptions{})
	})
	switch {
	case isNotFound(err):
		s.printf("-- %s was not set\n", termSafe(key))
		return false, nil
	case err == nil:
		s.printf("-- deleted %s\n", termSafe(key))
	}
	return false, err
}

// get is `/get KEY`: the value, escaped, as it may hold anything.
func (s *chatSession) get(ctx context.Context, args string) (bool, error) {
	key := strings.TrimSpace(args)
	if key == "" || strings.ContainsAny(key, " \t") {
		return false, errors.New("usage: /get KEY")
	}
	var value []byte
	err := s.do(ctx, false, func(ctx context.Context, c *client.Client) (err error) {
		value, _, err = c.KVGet(ctx, key, client.GetOptions{})
		return err
	})
	if isNotFound(err) {
		s.printf("-- %s is not set\n", termSafe(key))
		return false, nil
	}
	if err == nil {
		s.printf("-- %s = %s\n", termSafe(key), termSafeLines(string(value)))
	}
	return false, err
}
