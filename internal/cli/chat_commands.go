package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/parley-chat/parley/client"
)

// handleLine carries out one line typed in the chat and reports whether the
// chat should end. Command words are recognised in upper case as in the
// TUM seed (WSP, ACTIVE, PUT, GET, HELP, QUIT) or after a slash in any case
// (/wsp, /quit); any other line is posted. Failures are printed and the
// chat goes on.
func (s *chatSession) handleLine(ctx context.Context, line string) (quit bool) {
	if strings.TrimSpace(line) == "" {
		return false
	}
	word, rest, _ := strings.Cut(strings.TrimLeft(line, " \t"), " ")
	rest = strings.TrimLeft(rest, " \t")
	cmd := word
	if strings.HasPrefix(word, "/") {
		cmd = strings.ToUpper(word[1:])
	}
	var err error
	switch cmd {
	case "QUIT":
		return true
	case "HELP":
		s.printf("-- type a line to post it; commands:\n")
		for l := range strings.Lines(chatCommands) {
			s.printf("-- %s", l)
		}
	case "WSP":
		err = s.whisper(ctx, rest)
	case "ACTIVE":
		err = s.active(ctx)
	case "PUT":
		err = s.put(ctx, rest)
	case "GET":
		err = s.get(ctx, rest)
	default:
		if strings.HasPrefix(word, "/") {
			err = fmt.Errorf("unknown command %s; type HELP for the list", word)
			break
		}
		err = s.post(ctx, line, nil)
	}
	if err != nil {
		s.printf("-- error: %s\n", describe(err))
	}
	return false
}

// post posts text to the room, a whisper when to is set. The event shows
// when the feed delivers it, in its place in the room's order.
func (s *chatSession) post(ctx context.Context, text string, to []string) error {
	return s.do(ctx, true, func(ctx context.Context, c *client.Client) error {
		_, err := c.Post(ctx, s.room, text, client.PostOptions{To: to})
		return err
	})
}

// whisper is `WSP user1,user2 message`.
func (s *chatSession) whisper(ctx context.Context, args string) error {
	users, text, _ := strings.Cut(args, " ")
	text = strings.TrimSpace(text)
	var to []string
	for u := range strings.SplitSeq(users, ",") {
		if u = strings.TrimSpace(u); u != "" {
			to = append(to, u)
		}
	}
	if len(to) == 0 || text == "" {
		return errors.New("usage: WSP user1,user2 message")
	}
	return s.post(ctx, text, to)
}

// active is `ACTIVE`: the room's members who are online.
func (s *chatSession) active(ctx context.Context) error {
	var ms []client.Member
	err := s.do(ctx, false, func(ctx context.Context, c *client.Client) (err error) {
		ms, err = c.Members(ctx, s.room)
		return err
	})
	if err != nil {
		return err
	}
	var online, all []string
	for _, m := range ms {
		all = append(all, m.Username)
		if m.Online {
			online = append(online, m.Username)
		}
	}
	if len(online) == 0 {
		s.printf("-- nobody online in %s (%s: %s)\n", s.room, plural(len(all), "member"), strings.Join(all, ", "))
		return nil
	}
	s.printf("-- online in %s (%d of %s): %s\n", s.room, len(online), plural(len(all), "member"), strings.Join(online, ", "))
	return nil
}

// put is `PUT key value`; `PUT key` deletes the key, as in the TUM seed.
func (s *chatSession) put(ctx context.Context, args string) error {
	key, value, _ := strings.Cut(args, " ")
	if key == "" {
		return errors.New("usage: PUT key value (PUT key alone deletes it)")
	}
	if value == "" {
		err := s.do(ctx, true, func(ctx context.Context, c *client.Client) error {
			return c.KVDelete(ctx, key, client.DeleteOptions{})
		})
		if ce, ok := errors.AsType[*client.Error](err); ok && ce.Status == 404 {
			err = nil // deleting what is not there leaves it not there
		}
		if err == nil {
			s.printf("-- deleted %s\n", key)
		}
		return err
	}
	var version uint64
	err := s.do(ctx, true, func(ctx context.Context, c *client.Client) (err error) {
		version, err = c.KVPut(ctx, key, []byte(value), client.PutOptions{})
		return err
	})
	if err == nil {
		s.printf("-- stored %s (version %d)\n", key, version)
	}
	return err
}

// get is `GET key`.
func (s *chatSession) get(ctx context.Context, args string) error {
	key := strings.TrimSpace(args)
	if key == "" || strings.ContainsAny(key, " \t") {
		return errors.New("usage: GET key")
	}
	var value []byte
	err := s.do(ctx, false, func(ctx context.Context, c *client.Client) (err error) {
		value, _, err = c.KVGet(ctx, key, client.GetOptions{})
		return err
	})
	if ce, ok := errors.AsType[*client.Error](err); ok && ce.Status == 404 {
		s.printf("-- %s is not set\n", key)
		return nil
	}
	if err == nil {
		s.printf("-- %s = %s\n", key, value)
	}
	return err
}
