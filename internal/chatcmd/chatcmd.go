// Package chatcmd runs the in-chat commands of the TUM seed: a room post whose
// text is "/put KEY VALUE", "/get KEY" or "/del KEY" acts on the KV store as
// its poster, and the command's result is appended to the posted text, so
// every member sees what the command did.
//
// The KV operation and the post are two proposals in two partitions, not one
// atomic step: when the post fails after the KV write succeeded, the write
// stays. A retry with the same idempotency key repeats neither effect (the KV
// write is deduplicated under a key derived from the post's), so a client that
// retries until success ends with exactly one write and one message.
package chatcmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/text"
	"github.com/parley-chat/parley/internal/wire"
)

// Rooms is the room service the commands wrap (chat.Service satisfies it).
type Rooms interface {
	Post(ctx context.Context, user, room, text string, to []string, idempotencyKey string) (chat.PostResult, error)
	Members(ctx context.Context, user, room string, stale bool) ([]chat.Member, int64, error)
}

// KV is the part of the KV service the commands use (kv.Service satisfies it).
type KV interface {
	Put(ctx context.Context, user, key string, value []byte, ifVersion uint64, idempotencyKey string) (uint64, error)
	Delete(ctx context.Context, user, key string, ifVersion uint64, idempotencyKey string) error
	Get(ctx context.Context, key string, stale bool) (kv.Item, int64, error)
}

var (
	_ Rooms = (*chat.Service)(nil)
	_ KV    = (*kv.Service)(nil)
)

// Command is one parsed in-chat command.
type Command struct {
	// Op is "put", "get" or "del".
	Op string
	// Key is the KV key the command acts on.
	Key string
	// Value is the value of a put (the rest of the line after the key).
	Value string
}

// Parse recognises an in-chat command at the start of text: "/put KEY VALUE",
// "/get KEY" or "/del KEY" (the command word is case-insensitive). ok is false
// for every other text, which is posted as it is.
func Parse(text string) (c Command, ok bool) {
	if !strings.HasPrefix(text, "/") {
		return Command{}, false
	}
	word, rest, _ := strings.Cut(text[1:], " ")
	rest = strings.TrimLeft(rest, " ")
	switch op := strings.ToLower(word); op {
	case "put":
		key, value, found := strings.Cut(rest, " ")
		if key == "" || !found {
			return Command{}, false
		}
		return Command{Op: op, Key: key, Value: value}, true
	case "get", "del":
		key := strings.TrimRight(rest, " ")
		if key == "" || strings.Contains(key, " ") {
			return Command{}, false
		}
		return Command{Op: op, Key: key}, true
	}
	return Command{}, false
}

// Poster posts room messages, running in-chat commands first.
type Poster struct {
	rooms   Rooms
	kv      KV
	maxText int
}

// NewPoster returns a Poster over rooms and kv; maxText is the room service's
// text limit, which the appended result is clipped to fit.
func NewPoster(rooms Rooms, kv KV, maxText int) *Poster {
	return &Poster{rooms: rooms, kv: kv, maxText: maxText}
}

// Post posts text to room as user. A text that is an in-chat command runs it
// first, as user, and posts the text with " → RESULT" appended. Only a member
// of the room may run a command (errs.Forbidden, checked before the KV store
// is touched); a failed KV operation is reported in the posted result, not as
// an error of the post. A command text the room service would refuse for its
// characters (internal/text) is refused before the command runs.
func (p *Poster) Post(ctx context.Context, user, room, msg string, to []string, idempotencyKey string) (chat.PostResult, error) {
	c, ok := Parse(msg)
	if !ok {
		return p.rooms.Post(ctx, user, room, msg, to, idempotencyKey)
	}
	if err := text.Check(msg, text.Lines); err != nil {
		return chat.PostResult{}, errs.New(errs.Invalid, "text: %v", err)
	}
	if err := p.checkMember(ctx, user, room); err != nil {
		return chat.PostResult{}, err
	}
	result, err := p.run(ctx, user, c, idempotencyKey)
	if err != nil {
		return chat.PostResult{}, err
	}
	return p.rooms.Post(ctx, user, room, p.withResult(msg, result), to, idempotencyKey)
}

// checkMember refuses a command by someone who may not post to room, before
// the command touches the store (a stale read: the post itself checks again).
func (p *Poster) checkMember(ctx context.Context, user, room string) error {
	members, _, err := p.rooms.Members(ctx, user, room, true)
	if err != nil {
		return err
	}
	for _, m := range members {
		if strings.EqualFold(m.Username, user) {
			return nil
		}
	}
	return errs.New(errs.Forbidden, "join room %q to post in it", room)
}

// run performs c and describes its outcome. Errors the poster caused (a
// missing key, a bad key, a too large value) become the description; others
// (no quorum, a timeout) are returned so the client retries.
func (p *Poster) run(ctx context.Context, user string, c Command, idempotencyKey string) (string, error) {
	kvKey := ""
	if idempotencyKey != "" {
		kvKey = idempotencyKey + "/kv"
		if len(kvKey) > wire.MaxIdempotencyKey {
			kvKey = ""
		}
	}
	switch c.Op {
	case "put":
		v, err := p.kv.Put(ctx, user, c.Key, []byte(c.Value), 0, kvKey)
		if err != nil {
			return describe(err)
		}
		return fmt.Sprintf("stored %s (version %d)", c.Key, v), nil
	case "del":
		if err := p.kv.Delete(ctx, user, c.Key, 0, kvKey); err != nil {
			return describe(err)
		}
		return fmt.Sprintf("deleted %s", c.Key), nil
	default:
		item, _, err := p.kv.Get(ctx, c.Key, false)
		if err != nil {
			return describe(err)
		}
		if !utf8.Valid(item.Value) {
			return fmt.Sprintf("%s = (%d bytes of binary data, version %d)", c.Key, len(item.Value), item.Version), nil
		}
		// The value is shown escaped: the post must pass the text rule, and
		// values, unlike messages, may hold any character.
		return fmt.Sprintf("%s = %s (version %d)", c.Key, text.EscapeLines(string(item.Value), ""), item.Version), nil
	}
}

// describe turns the poster's own mistakes into a posted description and
// passes every other error up.
func describe(err error) (string, error) {
	var e *errs.Error
	if errors.As(err, &e) {
		switch e.Code {
		case errs.NotFound:
			return "not found", nil
		case errs.Invalid, errs.TooLarge, errs.PreconditionFailed:
			return "refused: " + e.Message, nil
		}
	}
	return "", err
}

// withResult appends the result to text, clipping the result (never the
// text, which the room service accepted the length of) to the text limit.
func (p *Poster) withResult(text, result string) string {
	const sep = " → "
	room := p.maxText - len(text) - len(sep)
	if room <= 0 {
		return text
	}
	if len(result) > room {
		result = result[:room]
		for !utf8.ValidString(result) {
			result = result[:len(result)-1]
		}
	}
	return text + sep + result
}
