package presence

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/internal/wire"
)

// Tag is the first byte of every presence command. The partition state
// machine dispatches on it to hand the command to StateMachine.
const Tag byte = 'P'

// Operation bytes, the second byte of every command.
const (
	opRenew   byte = 'R'
	opRelease byte = 'D'
	opExpire  byte = 'E'
)

// Limits of commands. The decoder refuses anything beyond them.
const (
	// MaxTTL is the longest lease a Renew may grant.
	MaxTTL = time.Hour
	// MaxNameLen is the longest node id or username a command may carry, in
	// bytes.
	MaxNameLen = 255
)

// Command is a decoded presence command.
type Command interface {
	isCommand()
}

// Renew grants or extends Node's leases of Users until the apply time plus
// TTLMs.
//
// Encoding: Tag, 'R', uvarint len(Node), Node, uvarint TTLMs, user list.
// A user list is uvarint len(Users) then each user as uvarint length and
// bytes; users are non-empty, strictly increasing and at least one.
type Renew struct {
	Node  string
	TTLMs uint64
	Users []string
}

// Release ends Node's leases of Users at once; other nodes' leases of the
// same users are untouched.
//
// Encoding: Tag, 'D', uvarint len(Node), Node, user list (see Renew).
type Release struct {
	Node  string
	Users []string
}

// Expire deletes leases of the partition that ran out at or before the
// apply time, at most Limit of them.
//
// Encoding: Tag, 'E', uvarint Limit (at least 1).
type Expire struct {
	Limit uint64
}

func (Renew) isCommand()   {}
func (Release) isCommand() {}
func (Expire) isCommand()  {}

// errMalformed is the cause of every DecodeCommand error.
var errMalformed = errors.New("presence: malformed command")

// EncodeRenew returns the binary encoding of c; c.Users must be sorted with
// no duplicates.
func EncodeRenew(c Renew) []byte {
	b := make([]byte, 0, 2+3*binary.MaxVarintLen64+len(c.Node)+usersLen(c.Users))
	b = wire.AppendString(append(b, Tag, opRenew), c.Node)
	b = binary.AppendUvarint(b, c.TTLMs)
	return appendUsers(b, c.Users)
}

// EncodeRelease returns the binary encoding of c; c.Users must be sorted
// with no duplicates.
func EncodeRelease(c Release) []byte {
	b := make([]byte, 0, 2+2*binary.MaxVarintLen64+len(c.Node)+usersLen(c.Users))
	b = wire.AppendString(append(b, Tag, opRelease), c.Node)
	return appendUsers(b, c.Users)
}

// EncodeExpire returns the binary encoding of c.
func EncodeExpire(c Expire) []byte {
	return binary.AppendUvarint([]byte{Tag, opExpire}, c.Limit)
}

func usersLen(users []string) int {
	n := binary.MaxVarintLen64
	for _, u := range users {
		n += binary.MaxVarintLen64 + len(u)
	}
	return n
}

func appendUsers(b []byte, users []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(users)))
	for _, u := range users {
		b = wire.AppendString(b, u)
	}
	return b
}

// DecodeCommand decodes a command made by one of the Encode functions. It
// accepts only canonical encodings (minimal varints, no trailing bytes,
// non-empty names of at most MaxNameLen bytes, sorted unique users, a TTL
// of 1 ms to MaxTTL, a positive limit), so every command it accepts
// re-encodes to the same bytes. It never panics.
func DecodeCommand(cmd []byte) (Command, error) {
	if len(cmd) < 2 || cmd[0] != Tag {
		return nil, fmt.Errorf("%w: missing tag or op", errMalformed)
	}
	op, rest := cmd[1], cmd[2:]
	switch op {
	case opRenew:
		node, rest, err := readName(rest)
		if err != nil {
			return nil, err
		}
		ttl, rest, err := readUvarint(rest)
		if err != nil {
			return nil, err
		}
		if ttl == 0 || ttl > uint64(MaxTTL.Milliseconds()) {
			return nil, fmt.Errorf("%w: ttl %d ms", errMalformed, ttl)
		}
		users, err := readUsers(rest)
		if err != nil {
			return nil, err
		}
		return Renew{Node: node, TTLMs: ttl, Users: users}, nil
	case opRelease:
		node, rest, err := readName(rest)
		if err != nil {
			return nil, err
		}
		users, err := readUsers(rest)
		if err != nil {
			return nil, err
		}
		return Release{Node: node, Users: users}, nil
	case opExpire:
		limit, rest, err := readUvarint(rest)
		if err != nil {
			return nil, err
		}
		if limit == 0 || len(rest) != 0 {
			return nil, fmt.Errorf("%w: expire limit %d with %d trailing bytes", errMalformed, limit, len(rest))
		}
		return Expire{Limit: limit}, nil
	default:
		return nil, fmt.Errorf("%w: unknown op %#x", errMalformed, op)
	}
}

// readUsers reads a user list that must end the command.
func readUsers(b []byte) ([]string, error) {
	n, rest, err := readUvarint(b)
	if err != nil {
		return nil, err
	}
	// Every user takes at least 2 bytes, which bounds the allocation.
	if n == 0 || n > uint64(len(rest)/2) {
		return nil, fmt.Errorf("%w: %d users in %d bytes", errMalformed, n, len(rest))
	}
	users := make([]string, 0, n)
	for range n {
		var u string
		if u, rest, err = readName(rest); err != nil {
			return nil, err
		}
		if len(users) > 0 && users[len(users)-1] >= u {
			return nil, fmt.Errorf("%w: users out of order", errMalformed)
		}
		users = append(users, u)
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errMalformed, len(rest))
	}
	return users, nil
}

// readName reads a uvarint length and that many bytes of non-empty name of
// at most MaxNameLen bytes.
func readName(b []byte) (string, []byte, error) {
	n, rest, err := readUvarint(b)
	if err != nil {
		return "", nil, err
	}
	if n == 0 || n > MaxNameLen || n > uint64(len(rest)) {
		return "", nil, fmt.Errorf("%w: name length %d with %d bytes left", errMalformed, n, len(rest))
	}
	return string(rest[:n]), rest[n:], nil
}

// readUvarint reads a minimally encoded uvarint (wire.Uvarint).
func readUvarint(b []byte) (uint64, []byte, error) { return wire.Uvarint(b, errMalformed) }
