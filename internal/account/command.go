package account

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/internal/wire"
)

// Tag is the first byte of every account command. The partition state
// machine dispatches on it to hand the command to StateMachine.
const Tag byte = 'A'

// Operation bytes, the second byte of every command.
const (
	opCreateUser    byte = 'U'
	opClaimAdmin    byte = 'C'
	opCreateSession byte = 'S'
	opDeleteSession byte = 'D'
)

// flagAdmin is the one flag bit of CreateUser. Unknown bits are rejected, so
// a later field can be added under a new bit without old decoders misreading
// it.
const flagAdmin byte = 1

// TokenHashLen is the length of a session token's digest (SHA-256).
const TokenHashLen = 32

// Command is a decoded account command.
type Command interface {
	isCommand()
}

// CreateUser creates a user unless its name is taken case-insensitively.
//
// Encoding: Tag, 'U', flags, uvarint len(Username), Username, PasswordHash
// (the rest of the command).
type CreateUser struct {
	// Username is the name as the user typed it; the record is keyed by its
	// ASCII-lowercased form.
	Username string
	// PasswordHash is the PHC string computed before proposing.
	PasswordHash string
	// Admin is the result of the admin claim made before proposing.
	Admin bool
}

// ClaimAdmin asks for the cluster's one admin seat for a lowercased name.
// Apply grants it when the seat is free or already held by that name.
//
// Encoding: Tag, 'C', Username (the rest of the command).
type ClaimAdmin struct {
	Username string
}

// CreateSession stores a session of a user under its token's digest; Apply
// sets the expiry to the leader's time plus TTLMs.
//
// Encoding: Tag, 'S', TokenHash (32 bytes), uvarint TTLMs, Username (the
// rest of the command).
type CreateSession struct {
	// Username is the user's lowercased name, the token's prefix.
	Username  string
	TokenHash [TokenHashLen]byte
	// TTLMs is the session's lifetime in ms, more than 0.
	TTLMs uint64
}

// DeleteSession revokes the session with the token digest TokenHash.
//
// Encoding: Tag, 'D', TokenHash (32 bytes).
type DeleteSession struct {
	TokenHash [TokenHashLen]byte
}

func (CreateUser) isCommand()    {}
func (ClaimAdmin) isCommand()    {}
func (CreateSession) isCommand() {}
func (DeleteSession) isCommand() {}

// errMalformed is the cause of every DecodeCommand error.
var errMalformed = errors.New("account: malformed command")

// EncodeCreateUser returns the binary encoding of c.
func EncodeCreateUser(c CreateUser) []byte {
	b := make([]byte, 0, 3+binary.MaxVarintLen64+len(c.Username)+len(c.PasswordHash))
	var flags byte
	if c.Admin {
		flags |= flagAdmin
	}
	b = append(b, Tag, opCreateUser, flags)
	b = binary.AppendUvarint(b, uint64(len(c.Username)))
	b = append(b, c.Username...)
	return append(b, c.PasswordHash...)
}

// EncodeClaimAdmin returns the binary encoding of c.
func EncodeClaimAdmin(c ClaimAdmin) []byte {
	return append([]byte{Tag, opClaimAdmin}, c.Username...)
}

// EncodeCreateSession returns the binary encoding of c.
func EncodeCreateSession(c CreateSession) []byte {
	b := make([]byte, 0, 2+TokenHashLen+binary.MaxVarintLen64+len(c.Username))
	b = append(b, Tag, opCreateSession)
	b = append(b, c.TokenHash[:]...)
	b = binary.AppendUvarint(b, c.TTLMs)
	return append(b, c.Username...)
}

// EncodeDeleteSession returns the binary encoding of d.
func EncodeDeleteSession(d DeleteSession) []byte {
	return append([]byte{Tag, opDeleteSession}, d.TokenHash[:]...)
}

// DecodeCommand decodes a command made by one of the Encode functions. It
// accepts only canonical encodings (minimal varints, no unknown flags, no
// trailing bytes, non-empty names and hashes, a positive TTL), so every
// command it accepts re-encodes to the same bytes. It never panics.
func DecodeCommand(cmd []byte) (Command, error) {
	if len(cmd) < 2 || cmd[0] != Tag {
		return nil, fmt.Errorf("%w: missing tag or op", errMalformed)
	}
	op, rest := cmd[1], cmd[2:]
	switch op {
	case opCreateUser:
		return decodeCreateUser(rest)
	case opClaimAdmin:
		if len(rest) == 0 {
			return nil, fmt.Errorf("%w: empty username", errMalformed)
		}
		return ClaimAdmin{Username: string(rest)}, nil
	case opCreateSession:
		return decodeCreateSession(rest)
	case opDeleteSession:
		if len(rest) != TokenHashLen {
			return nil, fmt.Errorf("%w: token hash of %d bytes", errMalformed, len(rest))
		}
		return DeleteSession{TokenHash: [TokenHashLen]byte(rest)}, nil
	case opCreateToken:
		return decodeCreateToken(rest)
	case opRevokeToken:
		return decodeRevokeToken(rest)
	case opTouchTokens:
		return decodeTouchTokens(rest)
	default:
		return nil, fmt.Errorf("%w: unknown op %#x", errMalformed, op)
	}
}

func decodeCreateUser(b []byte) (Command, error) {
	if len(b) < 1 {
		return nil, fmt.Errorf("%w: missing flags", errMalformed)
	}
	flags := b[0]
	if flags&^flagAdmin != 0 {
		return nil, fmt.Errorf("%w: unknown flags %#x", errMalformed, flags)
	}
	name, rest, err := readString(b[1:])
	if err != nil {
		return nil, err
	}
	if len(rest) == 0 {
		return nil, fmt.Errorf("%w: empty password hash", errMalformed)
	}
	return CreateUser{Username: name, PasswordHash: string(rest), Admin: flags&flagAdmin != 0}, nil
}

func decodeCreateSession(b []byte) (Command, error) {
	if len(b) < TokenHashLen {
		return nil, fmt.Errorf("%w: short token hash", errMalformed)
	}
	c := CreateSession{TokenHash: [TokenHashLen]byte(b[:TokenHashLen])}
	ttl, rest, err := readUvarint(b[TokenHashLen:])
	if err != nil {
		return nil, err
	}
	if ttl == 0 {
		return nil, fmt.Errorf("%w: zero ttl", errMalformed)
	}
	if len(rest) == 0 {
		return nil, fmt.Errorf("%w: empty username", errMalformed)
	}
	c.TTLMs, c.Username = ttl, string(rest)
	return c, nil
}

// readString reads a non-empty, length-prefixed string (wire.String).
func readString(b []byte) (string, []byte, error) { return wire.String(b, errMalformed) }

// readUvarint reads a minimally encoded uvarint (wire.Uvarint).
func readUvarint(b []byte) (uint64, []byte, error) { return wire.Uvarint(b, errMalformed) }
