package queue

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/wire"
)

// Result status bytes, the first byte of every result Apply returns. The
// second byte is the command's op, so that a result recorded for one kind of
// command is never read as another's (a client reusing an idempotency key).
// A refusal carries a message for the user after the op; a success carries
// the op's payload.
const (
	statusOK        byte = 0
	statusNotFound  byte = 1 // the queue does not exist
	statusConflict  byte = 2 // the queue exists (Create); unknown receipt or lapsed lease (Ack)
	statusForbidden byte = 3 // Delete by someone who is neither the creator nor an admin
	statusInvalid   byte = 4 // the command did not decode
)

// errBadResult is the cause of result decoding errors on malformed results.
var errBadResult = errors.New("queue: malformed result")

func okResult(op byte, size int) []byte {
	return append(make([]byte, 0, 2+size), statusOK, op)
}

func refusal(status, op byte, format string, args ...any) []byte {
	return fmt.Appendf([]byte{status, op}, format, args...)
}

// invalidResult refuses a command that did not decode; op is its second
// byte, 0 when it has none.
func invalidResult(cmd []byte, err error) []byte {
	var op byte
	if len(cmd) > 1 {
		op = cmd[1]
	}
	return refusal(statusInvalid, op, "%s", err)
}

// checkResult returns the payload of a successful result of op, or the
// refusal as an *errs.Error.
func checkResult(res []byte, op byte) ([]byte, error) {
	if len(res) < 2 {
		return nil, fmt.Errorf("%w: %d bytes", errBadResult, len(res))
	}
	if res[1] != op {
		if res[0] == statusInvalid {
			return nil, errs.New(errs.Invalid, "rejected command: %s", res[2:])
		}
		return nil, errs.New(errs.Conflict, "the idempotency key was already used for a different request")
	}
	msg := string(res[2:])
	switch res[0] {
	case statusOK:
		return res[2:], nil
	case statusNotFound:
		return nil, errs.New(errs.NotFound, "%s", msg)
	case statusConflict:
		return nil, errs.New(errs.Conflict, "%s", msg)
	case statusForbidden:
		return nil, errs.New(errs.Forbidden, "%s", msg)
	case statusInvalid:
		return nil, errs.New(errs.Invalid, "rejected command: %s", msg)
	default:
		return nil, fmt.Errorf("%w: unknown status %d", errBadResult, res[0])
	}
}

func createResult(createdMs int64) []byte {
	return binary.BigEndian.AppendUint64(okResult(opCreate, 8), uint64(createdMs))
}

func decodeCreateResult(res []byte) (createdMs int64, err error) {
	p, err := checkResult(res, opCreate)
	if err != nil {
		return 0, err
	}
	if len(p) != 8 {
		return 0, fmt.Errorf("%w: create payload of %d bytes", errBadResult, len(p))
	}
	return int64(binary.BigEndian.Uint64(p)), nil
}

func deleteResult(removed uint64) []byte {
	return binary.AppendUvarint(okResult(opDelete, binary.MaxVarintLen64), removed)
}

func decodeDeleteResult(res []byte) (removed uint64, err error) {
	p, err := checkResult(res, opDelete)
	if err != nil {
		return 0, err
	}
	n, rest, err := readUvarint(p)
	if err != nil || len(rest) != 0 {
		return 0, fmt.Errorf("%w: delete payload % x", errBadResult, p)
	}
	return n, nil
}

func sendResult(id uint64, timeMs int64) []byte {
	b := binary.AppendUvarint(okResult(opSend, binary.MaxVarintLen64+8), id)
	return binary.BigEndian.AppendUint64(b, uint64(timeMs))
}

func decodeSendResult(res []byte) (id uint64, timeMs int64, err error) {
	p, err := checkResult(res, opSend)
	if err != nil {
		return 0, 0, err
	}
	id, rest, err := readUvarint(p)
	if err != nil || len(rest) != 8 {
		return 0, 0, fmt.Errorf("%w: send payload % x", errBadResult, p)
	}
	return id, int64(binary.BigEndian.Uint64(rest)), nil
}

func ackResult() []byte { return okResult(opAck, 0) }

func decodeAckResult(res []byte) error {
	p, err := checkResult(res, opAck)
	if err == nil && len(p) != 0 {
		err = fmt.Errorf("%w: ack payload % x", errBadResult, p)
	}
	return err
}

// receiveResult is the decoded result of a Receive.
type receiveResult struct {
	// index is the Raft index the receive was applied at: a long poll that
	// found nothing waits for changes after it.
	index uint64
	// nextLapseMs is, when nothing was found, the earliest lease expiry in
	// the queue (0 when nothing is leased): a message may become eligible
	// then without any command.
	nextLapseMs int64
	found       bool
	msg         Message
}

// encodeReceiveResult encodes the result of a Receive: uvarint index, 8 bytes
// nextLapseMs, found byte, and when found: uvarint id, 8 bytes time, uvarint
// deliveries, 8 bytes lease expiry, uvarint lease index, str sender, str
// receiver, body (the rest).
func encodeReceiveResult(index uint64, nextLapseMs int64, id uint64, m *messageRecord) []byte {
	size := 2*binary.MaxVarintLen64 + 9
	if m != nil {
		size += 3*binary.MaxVarintLen64 + 16 + 2*binary.MaxVarintLen16 + len(m.sender) + len(m.receiver) + len(m.body)
	}
	b := binary.AppendUvarint(okResult(opReceive, size), index)
	b = binary.BigEndian.AppendUint64(b, uint64(nextLapseMs))
	if m == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(append(b, 1), id)
	b = binary.BigEndian.AppendUint64(b, uint64(m.timeMs))
	b = binary.AppendUvarint(b, m.deliveries)
	b = binary.BigEndian.AppendUint64(b, uint64(m.leaseUntil))
	b = binary.AppendUvarint(b, m.leaseIndex)
	b = wire.AppendString(b, m.sender)
	b = wire.AppendString(b, m.receiver)
	return append(b, m.body...)
}

func decodeReceiveResult(res []byte) (receiveResult, error) {
	p, err := checkResult(res, opReceive)
	if err != nil {
		return receiveResult{}, err
	}
	bad := func() (receiveResult, error) {
		return receiveResult{}, fmt.Errorf("%w: receive payload % x", errBadResult, p)
	}
	var r receiveResult
	rest := p
	if r.index, rest, err = readUvarint(rest); err != nil || len(rest) < 9 {
		return bad()
	}
	r.nextLapseMs = int64(binary.BigEndian.Uint64(rest))
	found := rest[8]
	rest = rest[9:]
	if found == 0 {
		if len(rest) != 0 {
			return bad()
		}
		return r, nil
	}
	if found != 1 {
		return bad()
	}
	r.found = true
	m := &r.msg
	if m.ID, rest, err = readUvarint(rest); err != nil || len(rest) < 8 {
		return bad()
	}
	m.TimeMs = int64(binary.BigEndian.Uint64(rest))
	if m.Deliveries, rest, err = readUvarint(rest[8:]); err != nil || len(rest) < 8 {
		return bad()
	}
	m.LeaseExpiresMs = int64(binary.BigEndian.Uint64(rest))
	var lease uint64
	if lease, rest, err = readUvarint(rest[8:]); err != nil {
		return bad()
	}
	if m.Sender, rest, err = readName(rest, "sender", true); err != nil {
		return bad()
	}
	if m.Receiver, rest, err = readName(rest, "receiver", true); err != nil {
		return bad()
	}
	m.Body = rest
	if lease != 0 {
		m.Receipt = FormatReceipt(m.ID, lease)
	}
	return r, nil
}

// receiptLen is the length of a receipt: 16 bytes in unpadded base64url.
const receiptLen = 22

// FormatReceipt returns the receipt of a lease on message id taken by the
// receive applied at Raft index lease: both numbers, 8 bytes big endian each,
// in unpadded base64url. Clients treat receipts as opaque.
func FormatReceipt(id, lease uint64) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:], id)
	binary.BigEndian.PutUint64(b[8:], lease)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// ParseReceipt returns the message id and lease index of a receipt made by
// FormatReceipt; ok is false when s is not one.
func ParseReceipt(s string) (id, lease uint64, ok bool) {
	if len(s) != receiptLen {
		return 0, 0, false
	}
	var b [16]byte
	n, err := base64.RawURLEncoding.Strict().Decode(b[:], []byte(s))
	if err != nil || n != 16 {
		return 0, 0, false
	}
	id, lease = binary.BigEndian.Uint64(b[:]), binary.BigEndian.Uint64(b[8:])
	return id, lease, id != 0 && lease != 0
}
