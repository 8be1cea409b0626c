package account

import (
	"encoding/binary"
	"fmt"

	"github.com/parley-chat/parley/internal/wire"
)

// Operation bytes of the personal API token commands, new at protocol
// TokenProtocol: a replica of an older build would refuse them, so they are
// proposed only once the whole cluster speaks it (Config.ClusterProtocol).
const (
	opCreateToken byte = 'P'
	opRevokeToken byte = 'R'
	opTouchTokens byte = 'T'
)

// TokenProtocol is the internal protocol (compat.Protocol) that introduced
// the personal API token commands.
const TokenProtocol = 2

// MaxTouchesPerCommand bounds the tokens one TouchTokens command updates.
const MaxTouchesPerCommand = 512

// CreateToken stores a personal API token of a user under its digest; Apply
// sets its creation to the leader's time and its expiry TTLMs later.
//
// Encoding: Tag, 'P', TokenHash (32 bytes), uvarint TTLMs, string Username,
// string ID, string Name, uvarint number of scopes, each scope as a string
// (its canonical spelling, in canonical order).
type CreateToken struct {
	// Username is the owner's lowercased name, the token's routing key.
	Username  string
	TokenHash [TokenHashLen]byte
	// ID names the token in listings and revocations; unique per user.
	ID string
	// Name is the owner's label for the token.
	Name   string
	Scopes Scopes
	// TTLMs is the token's lifetime in ms, more than 0.
	TTLMs uint64
}

// RevokeToken deletes the token ID of the user Username (lowercased).
//
// Encoding: Tag, 'R', string Username, ID (the rest).
type RevokeToken struct {
	Username, ID string
}

// TokenUse is the latest use of one token that a node saw.
type TokenUse struct {
	TokenHash [TokenHashLen]byte
	// AtMs is when, Unix ms by the node's clock.
	AtMs int64
}

// TouchTokens records when tokens were last used. Apply moves each token's
// last use forward only, so batches from several nodes, in any order, end
// at the latest; unknown tokens (revoked since) are skipped.
//
// Encoding: Tag, 'T', then for each use TokenHash (32 bytes) and uvarint
// AtMs; 1 to MaxTouchesPerCommand uses.
type TouchTokens struct {
	Uses []TokenUse
}

func (CreateToken) isCommand() {}
func (RevokeToken) isCommand() {}
func (TouchTokens) isCommand() {}

// EncodeCreateToken returns the binary encoding of c.
func EncodeCreateToken(c CreateToken) []byte {
	b := append(make([]byte, 0, 64+len(c.Username)+len(c.ID)+len(c.Name)), Tag, opCreateToken)
	b = append(b, c.TokenHash[:]...)
	b = binary.AppendUvarint(b, c.TTLMs)
	b = wire.AppendString(b, c.Username)
	b = wire.AppendString(b, c.ID)
	b = wire.AppendString(b, c.Name)
	return appendScopes(b, c.Scopes)
}

// EncodeRevokeToken returns the binary encoding of c.
func EncodeRevokeToken(c RevokeToken) []byte {
	b := wire.AppendString([]byte{Tag, opRevokeToken}, c.Username)
	return append(b, c.ID...)
}

// EncodeTouchTokens returns the binary encoding of c.
func EncodeTouchTokens(c TouchTokens) []byte {
	b := append(make([]byte, 0, 2+len(c.Uses)*(TokenHashLen+6)), Tag, opTouchTokens)
	for _, u := range c.Uses {
		b = append(b, u.TokenHash[:]...)
		b = binary.AppendUvarint(b, uint64(max(u.AtMs, 0)))
	}
	return b
}

func appendScopes(b []byte, ss Scopes) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = wire.AppendString(b, s.String())
	}
	return b
}

// readScopes reads what appendScopes wrote: 1 to MaxScopes valid scopes
// in canonical order.
func readScopes(b []byte, malformed error) (Scopes, []byte, error) {
	n, b, err := wire.Uvarint(b, malformed)
	if err != nil {
		return nil, nil, err
	}
	if n == 0 || n > MaxScopes {
		return nil, nil, fmt.Errorf("%w: %d scopes", malformed, n)
	}
	ss := make(Scopes, 0, n)
	prev := ""
	for range n {
		var str string
		if str, b, err = wire.String(b, malformed); err != nil {
			return nil, nil, err
		}
		s, err := ParseScope(str)
		if err != nil || s.String() != str || str <= prev {
			return nil, nil, fmt.Errorf("%w: scope %q not canonical or out of order", malformed, str)
		}
		ss, prev = append(ss, s), str
	}
	return ss, b, nil
}

func decodeCreateToken(b []byte) (Command, error) {
	if len(b) < TokenHashLen {
		return nil, fmt.Errorf("%w: short token hash", errMalformed)
	}
	c := CreateToken{TokenHash: [TokenHashLen]byte(b[:TokenHashLen])}
	var err error
	if c.TTLMs, b, err = readUvarint(b[TokenHashLen:]); err != nil {
		return nil, err
	}
	if c.TTLMs == 0 {
		return nil, fmt.Errorf("%w: zero ttl", errMalformed)
	}
	if c.Username, b, err = readString(b); err != nil {
		return nil, err
	}
	if c.ID, b, err = readString(b); err != nil {
		return nil, err
	}
	if c.Name, b, err = readString(b); err != nil {
		return nil, err
	}
	if c.Scopes, b, err = readScopes(b, errMalformed); err != nil {
		return nil, err
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errMalformed, len(b))
	}
	return c, nil
}

func decodeRevokeToken(b []byte) (Command, error) {
	name, rest, err := readString(b)
	if err != nil {
		return nil, err
	}
	if len(rest) == 0 {
		return nil, fmt.Errorf("%w: empty token id", errMalformed)
	}
	return RevokeToken{Username: name, ID: string(rest)}, nil
}

func decodeTouchTokens(b []byte) (Command, error) {
	var c TouchTokens
	for len(b) > 0 {
		if len(b) < TokenHashLen || len(c.Uses) == MaxTouchesPerCommand {
			return nil, fmt.Errorf("%w: touch %d", errMalformed, len(c.Uses))
		}
		u := TokenUse{TokenHash: [TokenHashLen]byte(b[:TokenHashLen])}
		at, rest, err := readUvarint(b[TokenHashLen:])
		if err != nil {
			return nil, err
		}
		if at > 1<<62 {
			return nil, fmt.Errorf("%w: use time %d", errMalformed, at)
		}
		u.AtMs, b = int64(at), rest
		c.Uses = append(c.Uses, u)
	}
	if len(c.Uses) == 0 {
		return nil, fmt.Errorf("%w: no token uses", errMalformed)
	}
	return c, nil
}
