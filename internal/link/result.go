package link

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/internal/errs"
)

// Result status bytes, the first byte of every result Apply returns.
const (
	statusOK        byte = 0 // Create, Update: the stored record; Delete: nothing; AddHits, AddVisits: uvarint links updated
	statusConflict  byte = 1 // Create: the code is taken
	statusNotFound  byte = 2 // Delete, Update: no such link
	statusForbidden byte = 3 // Delete: neither the owner nor an admin
	statusInvalid   byte = 4 // payload: message
	statusNotOwner  byte = 5 // Update: not the owner
)

// errBadResult is the cause of result decoding errors on malformed results.
var errBadResult = errors.New("link: malformed result")

func invalidResult(err error) []byte {
	return append([]byte{statusInvalid}, err.Error()...)
}

// resultStatus splits a result into its status and payload and turns every
// refusal into an error.
func resultStatus(res []byte) ([]byte, error) {
	if len(res) == 0 {
		return nil, fmt.Errorf("%w: empty", errBadResult)
	}
	p := res[1:]
	switch res[0] {
	case statusOK:
		return p, nil
	case statusInvalid:
		return nil, errs.New(errs.Invalid, "rejected command: %s", p)
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%w: status %d with %d bytes", errBadResult, res[0], len(p))
	}
	switch res[0] {
	case statusConflict:
		return nil, errs.New(errs.Conflict, "code is taken")
	case statusNotFound:
		return nil, errs.New(errs.NotFound, "link not found")
	case statusForbidden:
		return nil, errs.New(errs.Forbidden, "only the link's owner or an admin may delete it")
	case statusNotOwner:
		return nil, errs.New(errs.Forbidden, "only the link's owner may change it")
	default:
		return nil, fmt.Errorf("%w: unknown status %d", errBadResult, res[0])
	}
}

// decodeRecordResult decodes the result of Create or Update: the stored
// record, or the refusal (errs.Conflict, errs.NotFound, errs.Forbidden).
func decodeRecordResult(res []byte) (record, error) {
	p, err := resultStatus(res)
	if err != nil {
		return record{}, err
	}
	return decodeRecord(p)
}

// decodeDeleteResult decodes the result of Delete: errs.NotFound or
// errs.Forbidden on refusal.
func decodeDeleteResult(res []byte) error {
	p, err := resultStatus(res)
	if err == nil && len(p) != 0 {
		return fmt.Errorf("%w: %d bytes of payload for delete", errBadResult, len(p))
	}
	return err
}

// decodeHitsResult decodes the result of AddHits: how many links were
// updated.
func decodeHitsResult(res []byte) (uint64, error) {
	p, err := resultStatus(res)
	if err != nil {
		return 0, err
	}
	n, rest, err := readUvarint(p)
	if err != nil || len(rest) != 0 {
		return 0, fmt.Errorf("%w: hits payload % x", errBadResult, p)
	}
	return n, nil
}

func hitsResult(n uint64) []byte {
	return binary.AppendUvarint([]byte{statusOK}, n)
}
