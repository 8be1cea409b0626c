package link

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/parley-chat/parley/internal/wire"
)

// Settings are a link's lifecycle settings as commands carry them. The
// Service validates them (CheckSettings) before proposing; Apply stores
// them as they are.
//
// Encoding: uvarint ExpiresMs, uvarint MaxVisits, uvarint Status, uvarint
// len(Tags), then each tag as uvarint len + bytes, in strictly increasing
// order.
type Settings struct {
	// ExpiresMs is the Unix ms from which the link stops redirecting; 0:
	// never.
	ExpiresMs int64
	// MaxVisits is the number of counted visits after which it stops
	// redirecting; 0: no limit.
	MaxVisits uint64
	// Status is the redirect's HTTP status (301, 302, 307 or 308); 0 means
	// DefaultStatus.
	Status uint16
	// Tags are folded (ident.Fold), sorted and unique.
	Tags []string
}

func (s Settings) zero() bool {
	return s.ExpiresMs == 0 && s.MaxVisits == 0 && s.Status == 0 && len(s.Tags) == 0
}

func (s Settings) size() int {
	n := 4 * binary.MaxVarintLen64
	for _, t := range s.Tags {
		n += binary.MaxVarintLen64 + len(t)
	}
	return n
}

func (s Settings) append(b []byte) []byte {
	b = binary.AppendUvarint(b, uint64(s.ExpiresMs))
	b = binary.AppendUvarint(b, s.MaxVisits)
	b = binary.AppendUvarint(b, uint64(s.Status))
	return appendStrings(b, s.Tags)
}

func decodeSettings(b []byte) (Settings, []byte, error) {
	var s Settings
	exp, b, err := readUvarint(b)
	if err != nil {
		return s, nil, err
	}
	if s.MaxVisits, b, err = readUvarint(b); err != nil {
		return s, nil, err
	}
	status, b, err := readUvarint(b)
	if err != nil {
		return s, nil, err
	}
	if exp > math.MaxInt64 || status > math.MaxUint16 {
		return s, nil, fmt.Errorf("%w: expiry or status out of range", errMalformed)
	}
	s.ExpiresMs, s.Status = int64(exp), uint16(status)
	s.Tags, b, err = readTags(b)
	return s, b, err
}

// readTags reads a list of tags in strictly increasing order.
func readTags(b []byte) ([]string, []byte, error) {
	tags, b, err := readStrings(b)
	if err != nil {
		return nil, nil, err
	}
	for i := 1; i < len(tags); i++ {
		if strings.Compare(tags[i-1], tags[i]) >= 0 {
			return nil, nil, fmt.Errorf("%w: tags out of order", errMalformed)
		}
	}
	return tags, b, nil
}

// Field names a field an Update sets.
type Field byte

// Fields of Update.
const (
	FieldURL Field = 1 << iota
	FieldExpires
	FieldMaxVisits
	FieldStatus
	FieldTags
	FieldDisabled

	allFields = FieldURL | FieldExpires | FieldMaxVisits | FieldStatus | FieldTags | FieldDisabled
)

// Update changes the Fields of a link if User created it. Fields not named
// keep their values (and are zero in a decoded Update).
//
// Encoding: Tag, 'U', Fields, uvarint len(User), User, uvarint len(Code),
// Code, then each named field in the order of the Field bits: URL as
// uvarint len + bytes; ExpiresMs, MaxVisits and Status as uvarints; Tags as
// in Settings; Disabled as one byte, 0 or 1.
type Update struct {
	Code     string
	User     string
	Fields   Field
	URL      string
	Settings // ExpiresMs, MaxVisits, Status and Tags, when named
	Disabled bool
}

// EncodeUpdate returns the binary encoding of u.
func EncodeUpdate(u Update) []byte {
	b := make([]byte, 0, 3+3*binary.MaxVarintLen64+len(u.User)+len(u.Code)+len(u.URL)+u.Settings.size()+1)
	b = append(b, Tag, opUpdate, byte(u.Fields))
	b = wire.AppendString(b, u.User)
	b = wire.AppendString(b, u.Code)
	if u.Fields&FieldURL != 0 {
		b = wire.AppendString(b, u.URL)
	}
	if u.Fields&FieldExpires != 0 {
		b = binary.AppendUvarint(b, uint64(u.ExpiresMs))
	}
	if u.Fields&FieldMaxVisits != 0 {
		b = binary.AppendUvarint(b, u.MaxVisits)
	}
	if u.Fields&FieldStatus != 0 {
		b = binary.AppendUvarint(b, uint64(u.Status))
	}
	if u.Fields&FieldTags != 0 {
		b = appendStrings(b, u.Tags)
	}
	if u.Fields&FieldDisabled != 0 {
		var d byte
		if u.Disabled {
			d = 1
		}
		b = append(b, d)
	}
	return b
}

func decodeUpdate(b []byte) (Command, error) {
	if len(b) < 1 || b[0] == 0 || Field(b[0])&^allFields != 0 {
		return nil, fmt.Errorf("%w: no or unknown fields", errMalformed)
	}
	u := Update{Fields: Field(b[0])}
	var err error
	if u.User, b, err = readString(b[1:]); err != nil {
		return nil, err
	}
	if u.Code, b, err = readString(b); err != nil {
		return nil, err
	}
	if u.Fields&FieldURL != 0 {
		if u.URL, b, err = readString(b); err != nil {
			return nil, err
		}
	}
	if b, err = u.decodeNumbers(b); err != nil {
		return nil, err
	}
	if u.Fields&FieldTags != 0 {
		if u.Tags, b, err = readTags(b); err != nil {
			return nil, err
		}
	}
	if u.Fields&FieldDisabled != 0 {
		if len(b) < 1 || b[0] > 1 {
			return nil, fmt.Errorf("%w: disabled must be 0 or 1", errMalformed)
		}
		u.Disabled, b = b[0] == 1, b[1:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errMalformed, len(b))
	}
	return u, nil
}

// decodeNumbers reads the expiry, max visits and status an Update names.
func (u *Update) decodeNumbers(b []byte) ([]byte, error) {
	for _, f := range []Field{FieldExpires, FieldMaxVisits, FieldStatus} {
		if u.Fields&f == 0 {
			continue
		}
		v, rest, err := readUvarint(b)
		if err != nil {
			return nil, err
		}
		b = rest
		switch f {
		case FieldExpires:
			if v > math.MaxInt64 {
				return nil, fmt.Errorf("%w: expiry out of range", errMalformed)
			}
			u.ExpiresMs = int64(v)
		case FieldMaxVisits:
			u.MaxVisits = v
		case FieldStatus:
			if v > math.MaxUint16 {
				return nil, fmt.Errorf("%w: status out of range", errMalformed)
			}
			u.Status = uint16(v)
		}
	}
	return b, nil
}
