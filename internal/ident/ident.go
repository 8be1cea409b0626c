// Package ident holds the rules for the names users, rooms and queues go by:
// their alphabet, the username length limit and ASCII case folding. Keys,
// routing and Apply depend on them, so every replica must apply them
// identically, and they are declared here once for every domain package.
//
// Folding is ASCII-only on purpose: strings.ToLower follows Unicode tables
// that may differ between Go releases, and so between replicas. Names are
// ASCII anyway; other bytes pass through unchanged.
//
// Standard library only: domain packages import it.
package ident

// MaxUsername is the longest username in bytes. Registration refuses longer
// names and chat's Apply refuses commands naming longer users, so it is one
// limit for every package, not a setting.
const MaxUsername = 32

// IsNameByte reports whether c may appear in a user, room or queue name:
// [A-Za-z0-9_.-].
func IsNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
}

// ValidName reports whether s is 1 to max bytes of [A-Za-z0-9_.-].
func ValidName(s string, max int) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !IsNameByte(s[i]) {
			return false
		}
	}
	return true
}

// ValidUsername reports whether s is a well-formed username: 1 to
// MaxUsername bytes of [A-Za-z0-9_.-].
func ValidUsername(s string) bool { return ValidName(s, MaxUsername) }

// Fold returns s with ASCII letters lowercased and every other byte
// unchanged; s itself, without allocating, when it has no upper-case
// letter. Usernames and room names are case-insensitive: they are keyed,
// routed and compared folded.
func Fold(s string) string {
	for i := 0; i < len(s); i++ {
		if isUpper(s[i]) {
			return string(AppendFold(append(make([]byte, 0, len(s)), s[:i]...), s[i:]))
		}
	}
	return s
}

// AppendFold appends Fold(s) to dst.
func AppendFold(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		dst = append(dst, foldByte(s[i]))
	}
	return dst
}

// EqualFold reports whether Fold(a) == Fold(b), without allocating.
func EqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if foldByte(a[i]) != foldByte(b[i]) {
			return false
		}
	}
	return true
}

func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }

func foldByte(c byte) byte {
	if isUpper(c) {
		return c + 'a' - 'A'
	}
	return c
}
