package multiraft

import (
	"encoding/binary"
	"errors"
)

// envelope is what the engine actually replicates for a proposal: the
// domain command plus what Apply needs to stay deterministic and idempotent.
type envelope struct {
	// id identifies the proposal. The engine's own retries reuse it, and a
	// client idempotency key maps to a fixed id, so Apply can de-duplicate.
	id []byte
	// timeMs is the wall time stamped by the leader that proposed it.
	timeMs int64
	// windowMs is how long the id is remembered, stamped by the leader so
	// every replica expires records identically whatever its own flags.
	windowMs int64
	// cmd is the domain command; its first byte names the domain.
	cmd []byte
}

const envelopeVersion = 1

var errBadEnvelope = errors.New("multiraft: malformed command envelope")

// encode appends the envelope's wire form to dst.
func (e *envelope) encode(dst []byte) []byte {
	dst = append(dst, envelopeVersion)
	dst = binary.AppendUvarint(dst, uint64(len(e.id)))
	dst = append(dst, e.id...)
	dst = binary.AppendVarint(dst, e.timeMs)
	dst = binary.AppendVarint(dst, e.windowMs)
	return append(dst, e.cmd...)
}

// decodeEnvelope parses an envelope. The returned slices alias b.
func decodeEnvelope(b []byte) (envelope, error) {
	var e envelope
	if len(b) < 1 || b[0] != envelopeVersion {
		return e, errBadEnvelope
	}
	b = b[1:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) || n > 1024 {
		return e, errBadEnvelope
	}
	e.id = b[k : k+int(n)]
	b = b[k+int(n):]
	if e.timeMs, k = binary.Varint(b); k <= 0 {
		return e, errBadEnvelope
	}
	b = b[k:]
	if e.windowMs, k = binary.Varint(b); k <= 0 {
		return e, errBadEnvelope
	}
	e.cmd = b[k:]
	return e, nil
}
