package link

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/parley-chat/parley/internal/wire"
)

// Tag is the first byte of every link command. The partition state machine
// dispatches on it to hand the command to StateMachine.
const Tag byte = 'L'

// Operation bytes, the second byte of every command.
const (
	opCreate     byte = 'C' // a Create without settings
	opCreateWith byte = 'N' // a Create with settings (command_update.go)
	opDelete     byte = 'D'
	opAddHits    byte = 'H' // written by older nodes; still applied
	opUpdate     byte = 'U' // command_update.go
	opAddVisits  byte = 'V' // command_visits.go
)

// flagAdmin is the one flag bit of Delete. Unknown bits are rejected, so a
// later field can be added under a new bit without old decoders misreading
// it.
const flagAdmin byte = 1

// Command is a decoded link command.
type Command interface {
	isCommand()
}

// Create stores a link unless its code is taken.
//
// Encoding without settings (all zero): Tag, 'C', uvarint len(Code), Code,
// uvarint len(CreatedBy), CreatedBy, URL (the rest of the command). With
// settings: Tag, 'N', Code and CreatedBy as above, then the Settings
// (command_update.go), then URL (the rest). A Create has one encoding.
type Create struct {
	Code      string
	CreatedBy string
	URL       string
	Settings
}

// Delete removes a link if User created it or Admin is set.
//
// Encoding: Tag, 'D', flags, uvarint len(User), User, Code (the rest).
type Delete struct {
	Code  string
	User  string
	Admin bool
}

// AddHits adds counted redirects to links of one partition; codes that no
// longer exist are skipped.
//
// Encoding: Tag, 'H', uvarint len(Hits), then for each: uvarint len(Code),
// Code, uvarint N. Codes are strictly increasing and every N is at least 1.
type AddHits struct {
	Hits []CodeHits
}

// CodeHits is a number of redirects of one code.
type CodeHits struct {
	Code string
	N    uint64
}

func (Create) isCommand()    {}
func (Delete) isCommand()    {}
func (AddHits) isCommand()   {}
func (Update) isCommand()    {}
func (AddVisits) isCommand() {}

// errMalformed is the cause of every DecodeCommand error.
var errMalformed = errors.New("link: malformed command")

// EncodeCreate returns the binary encoding of c.
func EncodeCreate(c Create) []byte {
	b := make([]byte, 0, 2+2*binary.MaxVarintLen64+len(c.Code)+len(c.CreatedBy)+len(c.URL)+c.Settings.size())
	op := opCreate
	if !c.Settings.zero() {
		op = opCreateWith
	}
	b = append(b, Tag, op)
	b = wire.AppendString(b, c.Code)
	b = wire.AppendString(b, c.CreatedBy)
	if op == opCreateWith {
		b = c.Settings.append(b)
	}
	return append(b, c.URL...)
}

// EncodeDelete returns the binary encoding of d.
func EncodeDelete(d Delete) []byte {
	b := make([]byte, 0, 3+binary.MaxVarintLen64+len(d.User)+len(d.Code))
	var flags byte
	if d.Admin {
		flags = flagAdmin
	}
	b = append(b, Tag, opDelete, flags)
	b = wire.AppendString(b, d.User)
	return append(b, d.Code...)
}

// EncodeAddHits returns the binary encoding of a; a.Hits must be sorted by
// code with no duplicates.
func EncodeAddHits(a AddHits) []byte {
	n := 2 + binary.MaxVarintLen64
	for _, h := range a.Hits {
		n += 2*binary.MaxVarintLen64 + len(h.Code)
	}
	b := make([]byte, 0, n)
	b = append(b, Tag, opAddHits)
	b = binary.AppendUvarint(b, uint64(len(a.Hits)))
	for _, h := range a.Hits {
		b = wire.AppendString(b, h.Code)
		b = binary.AppendUvarint(b, h.N)
	}
	return b
}

// DecodeCommand decodes a command made by one of the Encode functions. It
// accepts only canonical encodings (minimal varints, no unknown flags, no
// trailing bytes, non-empty strings, sorted unique codes with positive
// counts), so every command it accepts re-encodes to the same bytes. It
// never panics.
func DecodeCommand(cmd []byte) (Command, error) {
	if len(cmd) < 2 || cmd[0] != Tag {
		return nil, fmt.Errorf("%w: missing tag or op", errMalformed)
	}
	op, rest := cmd[1], cmd[2:]
	switch op {
	case opCreate, opCreateWith:
		return decodeCreate(op, rest)
	case opDelete:
		if len(rest) < 1 || rest[0]&^flagAdmin != 0 {
			return nil, fmt.Errorf("%w: missing or unknown flags", errMalformed)
		}
		admin := rest[0]&flagAdmin != 0
		user, rest, err := readString(rest[1:])
		if err != nil {
			return nil, err
		}
		if len(rest) == 0 {
			return nil, fmt.Errorf("%w: empty code", errMalformed)
		}
		return Delete{Code: string(rest), User: user, Admin: admin}, nil
	case opAddHits:
		return decodeAddHits(rest)
	case opUpdate:
		return decodeUpdate(rest)
	case opAddVisits:
		return decodeAddVisits(rest)
	default:
		return nil, fmt.Errorf("%w: unknown op %#x", errMalformed, op)
	}
}

func decodeCreate(op byte, b []byte) (Command, error) {
	code, rest, err := readString(b)
	if err != nil {
		return nil, err
	}
	by, rest, err := readString(rest)
	if err != nil {
		return nil, err
	}
	c := Create{Code: code, CreatedBy: by}
	if op == opCreateWith {
		if c.Settings, rest, err = decodeSettings(rest); err != nil {
			return nil, err
		}
		if c.Settings.zero() {
			return nil, fmt.Errorf("%w: settings all zero", errMalformed)
		}
	}
	if len(rest) == 0 {
		return nil, fmt.Errorf("%w: empty url", errMalformed)
	}
	c.URL = string(rest)
	return c, nil
}

func decodeAddHits(b []byte) (Command, error) {
	n, rest, err := readUvarint(b)
	if err != nil {
		return nil, err
	}
	// Every entry takes at least 3 bytes, which bounds the allocation.
	if n == 0 || n > uint64(len(rest)/3) {
		return nil, fmt.Errorf("%w: %d hit entries in %d bytes", errMalformed, n, len(rest))
	}
	hits := make([]CodeHits, 0, n)
	for range n {
		var h CodeHits
		if h.Code, rest, err = readString(rest); err != nil {
			return nil, err
		}
		if h.N, rest, err = readUvarint(rest); err != nil {
			return nil, err
		}
		if h.N == 0 {
			return nil, fmt.Errorf("%w: zero hits for %q", errMalformed, h.Code)
		}
		if len(hits) > 0 && strings.Compare(hits[len(hits)-1].Code, h.Code) >= 0 {
			return nil, fmt.Errorf("%w: codes out of order", errMalformed)
		}
		hits = append(hits, h)
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errMalformed, len(rest))
	}
	return AddHits{Hits: hits}, nil
}

// readString reads a non-empty, length-prefixed string (wire.String).
func readString(b []byte) (string, []byte, error) { return wire.String(b, errMalformed) }

// readUvarint reads a minimally encoded uvarint (wire.Uvarint).
func readUvarint(b []byte) (uint64, []byte, error) { return wire.Uvarint(b, errMalformed) }
