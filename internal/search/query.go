package search

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ident"
)

// Query limits.
const (
	// MaxQueryBytes is the longest query text accepted.
	MaxQueryBytes = 512
	// MaxTerms is the most words and phrases one query may hold.
	MaxTerms = 16
	// DefaultLimit and MaxLimit bound how many hits one search returns.
	DefaultLimit = 20
	MaxLimit     = 100
)

// Query is a parsed search text: every word and every phrase must occur in
// a message's text (case-insensitively, whole words), From restricts the
// sender and Room the room.
type Query struct {
	// Words are single words, as typed.
	Words []string `json:"words,omitempty"`
	// Phrases are quoted word sequences, as typed between the quotes.
	Phrases []string `json:"phrases,omitempty"`
	// From is the sender, folded (ident.Fold); "" for anyone.
	From string `json:"from,omitempty"`
	// Room is the room, folded as room names are (ident.Fold); "" for any.
	Room string `json:"room,omitempty"`
}

// Empty reports whether q selects by nothing at all.
func (q Query) Empty() bool {
	return len(q.Words) == 0 && len(q.Phrases) == 0 && q.From == "" && q.Room == ""
}

// Parse reads the search syntax: words separated by spaces, "quoted
// phrases" (an unterminated quote runs to the end), from:USER (or
// from:@USER) and in:ROOM (or in:#ROOM). It fails with errs.Invalid for a
// text longer than MaxQueryBytes, not UTF-8, with more than MaxTerms words
// and phrases, with an empty from: or in:, or naming two senders or two
// rooms.
func Parse(text string) (Query, error) {
	var q Query
	if len(text) > MaxQueryBytes {
		return q, errs.New(errs.Invalid, "q is %d bytes long; at most %d", len(text), MaxQueryBytes)
	}
	if !utf8.ValidString(text) {
		return q, errs.New(errs.Invalid, "q is not valid UTF-8")
	}
	rest := text
	for {
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
		if rest == "" {
			break
		}
		var tok string
		if rest[0] == '"' {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				tok, rest = rest[1:], ""
			} else {
				tok, rest = rest[1:1+end], rest[2+end:]
			}
			if phrase := strings.Join(strings.Fields(tok), " "); phrase != "" {
				q.Phrases = append(q.Phrases, phrase)
			}
			continue
		}
		end := strings.IndexFunc(rest, unicode.IsSpace)
		if end < 0 {
			end = len(rest)
		}
		tok, rest = rest[:end], rest[end:]
		if err := q.add(tok); err != nil {
			return q, err
		}
	}
	if n := len(q.Words) + len(q.Phrases); n > MaxTerms {
		return q, errs.New(errs.Invalid, "q has %d words and phrases; at most %d", n, MaxTerms)
	}
	return q, nil
}

// add adds one unquoted token: a filter or a word.
func (q *Query) add(tok string) error {
	lower := strings.ToLower(tok)
	switch {
	case strings.HasPrefix(lower, "from:"):
		return setOnce(&q.From, "from:", ident.Fold(strings.TrimPrefix(tok[len("from:"):], "@")))
	case strings.HasPrefix(lower, "in:"):
		return setOnce(&q.Room, "in:", ident.Fold(strings.TrimPrefix(tok[len("in:"):], "#")))
	}
	q.Words = append(q.Words, tok)
	return nil
}

// setOnce sets a filter, refusing an empty one and a second, different one.
func setOnce(dst *string, name, v string) error {
	switch {
	case v == "":
		return errs.New(errs.Invalid, "%s needs a name after it", name)
	case *dst != "" && *dst != v:
		return errs.New(errs.Invalid, "q names two different %s filters (%q and %q)", name, *dst, v)
	}
	*dst = v
	return nil
}

// Merge adds the filters given outside the text (the room= and from=
// parameters) to q; a filter that contradicts the text's is errs.Invalid.
func (q *Query) Merge(room, from string) error {
	if room != "" {
		if err := setOnce(&q.Room, "room", ident.Fold(room)); err != nil {
			return err
		}
	}
	if from != "" {
		if err := setOnce(&q.From, "from", ident.Fold(strings.TrimPrefix(from, "@"))); err != nil {
			return err
		}
	}
	return nil
}
