package account

import (
	"fmt"
	"slices"
	"strings"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ident"
)

// Level is how much a personal API token may do. Each level includes the
// ones below it.
type Level uint8

// Token levels.
const (
	// LevelRead allows safe requests only: GET and HEAD, and the read side
	// of the stream.
	LevelRead Level = 1
	// LevelWrite allows everything a signed-in user may do but the admin
	// routes.
	LevelWrite Level = 2
	// LevelAdmin allows the admin routes as well; only an admin may grant
	// it.
	LevelAdmin Level = 3
)

// String names the level as scopes spell it: "read", "write", "admin".
func (l Level) String() string {
	switch l {
	case LevelRead:
		return "read"
	case LevelWrite:
		return "write"
	case LevelAdmin:
		return "admin"
	}
	return fmt.Sprintf("level(%d)", uint8(l))
}

// Resource kinds a scope may be narrowed to.
const (
	KindRoom  = "room"
	KindQueue = "queue"
)

// Limits of a token's scopes.
const (
	// MaxScopes bounds the scopes of one token.
	MaxScopes = 32
	// maxResourceName bounds a room or queue name in a scope (the rooms'
	// and queues' own limit).
	maxResourceName = 64
)

// Scope grants a Level on everything, or, when narrowed, on one room or
// queue only. It is written "LEVEL" or "LEVEL:KIND/NAME", for example
// "read" or "write:room/general"; admin is never narrowed.
type Scope struct {
	Level Level
	// Kind is "" (everything), KindRoom or KindQueue.
	Kind string
	// Name is the room or queue, ASCII-lowercased; "" when Kind is "".
	Name string
}

// String returns the scope's canonical spelling.
func (s Scope) String() string {
	if s.Kind == "" {
		return s.Level.String()
	}
	return s.Level.String() + ":" + s.Kind + "/" + s.Name
}

// ParseScope parses one scope ("read", "write:queue/jobs"); errs.Invalid
// naming the problem when it is not one.
func ParseScope(str string) (Scope, error) {
	lvl, res, narrowed := strings.Cut(str, ":")
	var s Scope
	switch lvl {
	case "read":
		s.Level = LevelRead
	case "write":
		s.Level = LevelWrite
	case "admin":
		s.Level = LevelAdmin
	default:
		return Scope{}, errs.New(errs.Invalid, "scope %q: the level must be read, write or admin", clip(str))
	}
	if !narrowed {
		return s, nil
	}
	if s.Level == LevelAdmin {
		return Scope{}, errs.New(errs.Invalid, "scope %q: admin cannot be narrowed to a room or queue", clip(str))
	}
	kind, name, ok := strings.Cut(res, "/")
	if !ok || (kind != KindRoom && kind != KindQueue) {
		return Scope{}, errs.New(errs.Invalid, "scope %q: narrow it as LEVEL:room/NAME or LEVEL:queue/NAME", clip(str))
	}
	if !ident.ValidName(name, maxResourceName) {
		return Scope{}, errs.New(errs.Invalid, "scope %q: a %s name is 1-%d characters of [A-Za-z0-9_.-]", clip(str), kind, maxResourceName)
	}
	s.Kind, s.Name = kind, ident.Fold(name)
	return s, nil
}

// clip shortens user input quoted in an error message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// Scopes is what a personal API token may do: the union of its scopes. A
// nil Scopes stands for a login session, which may do everything its user
// may.
type Scopes []Scope

// ParseScopes parses a token's scopes: 1 to MaxScopes of them, returned in
// canonical order without duplicates.
func ParseScopes(list []string) (Scopes, error) {
	if len(list) == 0 {
		return nil, errs.New(errs.Invalid, "scopes: give at least one of read, write, admin (optionally narrowed, as write:room/NAME)")
	}
	if len(list) > MaxScopes {
		return nil, errs.New(errs.Invalid, "scopes: at most %d", MaxScopes)
	}
	out := make(Scopes, 0, len(list))
	for _, str := range list {
		s, err := ParseScope(str)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out.canonical(), nil
}

// canonical sorts the scopes by their spelling and drops duplicates.
func (ss Scopes) canonical() Scopes {
	slices.SortFunc(ss, func(a, b Scope) int { return strings.Compare(a.String(), b.String()) })
	return slices.Compact(ss)
}

// Strings returns the scopes' spellings.
func (ss Scopes) Strings() []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.String()
	}
	return out
}

// Allows reports whether the scopes permit a request that needs level on
// the room or queue kind/name; kind "" is a request that is not about one
// room or queue, which only scopes that are not narrowed permit. Nil
// Scopes (a login session) permit everything.
func (ss Scopes) Allows(level Level, kind, name string) bool {
	if ss == nil {
		return true
	}
	for _, s := range ss {
		if s.Level < level {
			continue
		}
		if s.Kind == "" || (kind == s.Kind && ident.EqualFold(name, s.Name)) {
			return true
		}
	}
	return false
}

// Has reports whether some scope grants level on everything.
func (ss Scopes) Has(level Level) bool {
	return ss.Allows(level, "", "")
}
