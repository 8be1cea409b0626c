package chat

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ident"
)

// MaxMentions is the most distinct @usernames of one message that count;
// later ones are plain text.
const MaxMentions = 50

// Mentions is what a message's text mentions.
type Mentions struct {
	// Users are the @usernames, in order of first appearance, each once
	// (case-insensitively), without "room" and "here".
	Users []string
	// Room and Here are set by @room and @here.
	Room, Here bool
}

// ParseMentions finds the mentions of a message: "@" followed by a
// username (1 to 32 of A-Z a-z 0-9 _ . -, a trailing '.' left out so that
// "ask @bob." names bob), at the start of the text or after a character
// that is not a username character, outside inline code and code blocks.
// "@room" and "@here" mention the room's members and its members online; a
// user named room or here is mentioned only as such.
func ParseMentions(s string) Mentions {
	var m Mentions
	seen := map[string]bool{}
	inCode := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '`' {
			inCode = !inCode
			continue
		}
		if c != '@' || inCode || (i > 0 && ident.IsNameByte(s[i-1])) {
			continue
		}
		j := i + 1
		for j < len(s) && j-i-1 < ident.MaxUsername && ident.IsNameByte(s[j]) {
			j++
		}
		if j < len(s) && ident.IsNameByte(s[j]) {
			continue // longer than any username
		}
		for j > i+1 && s[j-1] == '.' {
			j--
		}
		if j == i+1 {
			continue
		}
		name := s[i+1 : j]
		switch f := ident.Fold(name); {
		case f == "room":
			m.Room = true
		case f == "here":
			m.Here = true
		case !seen[f] && len(m.Users) < MaxMentions:
			seen[f] = true
			m.Users = append(m.Users, name)
		}
		i = j - 1
	}
	return m
}

// maxEmojiRunes bounds a Unicode emoji's code points (a family ZWJ
// sequence has 7).
const maxEmojiRunes = 10

// CheckEmoji validates a reaction's emoji: a ":shortcode:" of 1 to 32
// lower-case letters, digits, '_', '+' and '-', or one Unicode emoji of up
// to 10 code points (symbols, with the joiners, variation selectors, skin
// tones, keycaps and tags emoji sequences use). Anything else is
// errs.Invalid naming "emoji".
func CheckEmoji(e string) error {
	if strings.HasPrefix(e, ":") {
		name, ok := strings.CutSuffix(e[1:], ":")
		if !ok || name == "" || len(name) > 32 || strings.ContainsFunc(name, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '+' || r == '-')
		}) {
			return errs.New(errs.Invalid, "emoji: a shortcode is 1 to 32 of a-z 0-9 _ + - between colons, like :thumbsup:")
		}
		return nil
	}
	if e == "" || !utf8.ValidString(e) || len(e) > MaxEmoji || utf8.RuneCountInString(e) > maxEmojiRunes {
		return errs.New(errs.Invalid, "emoji: give one emoji or a :shortcode:")
	}
	symbol := false
	for _, r := range e {
		switch {
		case unicode.Is(unicode.So, r) || unicode.Is(unicode.Sk, r) && r >= 0x1F3FB && r <= 0x1F3FF:
			symbol = symbol || unicode.Is(unicode.So, r)
		case r == 0x200D, r == 0xFE0F, r == 0xFE0E, r == 0x20E3, r >= 0xE0020 && r <= 0xE007F,
			r >= '0' && r <= '9', r == '#', r == '*':
		default:
			return errs.New(errs.Invalid, "emoji: U+%04X is not part of an emoji; give one emoji or a :shortcode:", r)
		}
	}
	if !symbol && !strings.ContainsRune(e, 0x20E3) {
		return errs.New(errs.Invalid, "emoji: give one emoji or a :shortcode:")
	}
	return nil
}
