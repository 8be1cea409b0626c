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
	statusConflict  byte = 2 // the queue exists (Create); unknown receipt or lapsed lease; a full queue
	statusForbidden byte = 3 // by someone who is neither the creator nor an admin
	statusInvalid   byte = 4 // the command did not decode, or names impossible settings
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

func decodeAckResult(res []byte) error { return decodeOKResult(res, opAck) }

// receiveResult is the decoded result of a Receive.
type receiveResult struct {
	// index is the Raft index the receive was applied at: a long poll that
	// found nothing waits for changes after it.
	index uint64
	// nextLapseMs is, when nothing was found, the earliest timer of the
	// queue (a lease expiry or a delayed delivery; 0 when there is none): a
	// message may become eligible then without any command.
	nextLapseMs int64
	msgs        []Message
	// found and msg are the first message, for the single receives.
	found bool
	msg   Message
}

// encodeReceiveResult encodes the result of a Receive: uvarint index, 8
// bytes nextLapseMs, uvarint n, then per message uvarint id and bytes
// record (the message record as stored).
func encodeReceiveResult(index uint64, nextLapseMs int64, taken []takenMessage) []byte {
	size := 3*binary.MaxVarintLen64 + 8
	for i := range taken {
		size += 2*binary.MaxVarintLen64 + messageFixedLen + 64 + len(taken[i].m.body)
	}
	b := binary.AppendUvarint(okResult(opReceive, size), index)
	b = binary.BigEndian.AppendUint64(b, uint64(nextLapseMs))
	b = binary.AppendUvarint(b, uint64(len(taken)))
	for i := range taken {
		b = binary.AppendUvarint(b, taken[i].id)
		b = wire.AppendBytes(b, taken[i].m.encode())
	}
	return b
}

func decodeReceiveResult(res []byte) (receiveResult, error) {
	p, err := checkResult(res, opReceive)
	if err != nil {
		return receiveResult{}, err
	}
	var r receiveResult
	rest := p
	bad := func() (receiveResult, error) {
		return receiveResult{}, fmt.Errorf("%w: receive payload % x", errBadResult, p)
	}
	if r.index, rest, err = readUvarint(rest); err != nil || len(rest) < 8 {
		return bad()
	}
	r.nextLapseMs = int64(binary.BigEndian.Uint64(rest))
	n, rest, err := readUvarint(rest[8:])
	if err != nil || n > MaxBatch {
		return bad()
	}
	for range n {
		var id uint64
		var rec []byte
		if id, rest, err = readUvarint(rest); err != nil {
			return bad()
		}
		if rec, rest, err = wire.Bytes(rest, errBadResult); err != nil {
			return bad()
		}
		m, err := decodeMessageRecord(nil, rec)
		if err != nil {
			return bad()
		}
		r.msgs = append(r.msgs, messageOf(id, &m))
	}
	if len(rest) != 0 {
		return bad()
	}
	if r.found = len(r.msgs) > 0; r.found {
		r.msg = r.msgs[0]
	}
	return r, nil
}

// messageOf returns the public view of a stored message.
func messageOf(id uint64, m *messageRecord) Message {
	msg := Message{
		ID: id, Sender: m.sender, Receiver: m.receiver, TimeMs: m.timeMs, Body: m.body, Deliveries: m.deliveries,
		Priority: int(m.priority), Group: m.group, ExpiresMs: m.expiresMs,
		Origin: m.origin, DeadReason: m.deadReason, LastReason: m.lastReason, State: stateNames[m.state],
	}
	switch m.state {
	case stateLeased:
		msg.Receipt, msg.LeaseExpiresMs = FormatReceipt(id, m.leaseIndex), m.until
	case stateDelayed, stateWaiting:
		msg.DeliverAtMs = m.until
	}
	return msg
}

// stateNames are the names of message states in Message.State.
var stateNames = [...]string{stateReady: "ready", stateLeased: "leased", stateDelayed: "delayed", stateWaiting: "waiting"}

// batchResult encodes the result of a SendBatch: uvarint n, the ids
// (uvarint each), 8 bytes time.
func batchResult(ids []uint64, timeMs int64) []byte {
	b := binary.AppendUvarint(okResult(opBatch, (len(ids)+1)*binary.MaxVarintLen64+8), uint64(len(ids)))
	for _, id := range ids {
		b = binary.AppendUvarint(b, id)
	}
	return binary.BigEndian.AppendUint64(b, uint64(timeMs))
}

func decodeBatchResult(res []byte) (ids []uint64, timeMs int64, err error) {
	p, err := checkResult(res, opBatch)
	if err != nil {
		return nil, 0, err
	}
	n, rest, err := readUvarint(p)
	if err != nil || n > MaxBatch {
		return nil, 0, fmt.Errorf("%w: batch payload % x", errBadResult, p)
	}
	for range n {
		var id uint64
		if id, rest, err = readUvarint(rest); err != nil {
			return nil, 0, fmt.Errorf("%w: batch payload % x", errBadResult, p)
		}
		ids = append(ids, id)
	}
	if len(rest) != 8 {
		return nil, 0, fmt.Errorf("%w: batch payload % x", errBadResult, p)
	}
	return ids, int64(binary.BigEndian.Uint64(rest)), nil
}

func extendResult(untilMs int64) []byte {
	return binary.BigEndian.AppendUint64(okResult(opExtend, 8), uint64(untilMs))
}

func decodeExtendResult(res []byte) (int64, error) {
	p, err := checkResult(res, opExtend)
	if err != nil {
		return 0, err
	}
	if len(p) != 8 {
		return 0, fmt.Errorf("%w: extend payload % x", errBadResult, p)
	}
	return int64(binary.BigEndian.Uint64(p)), nil
}

func configResult(s Settings) []byte {
	return appendSettings(okResult(opConfig, 40+len(s.DeadLetter)), SettingsUpdate{Set: setAll, Settings: s})
}

func decodeConfigResult(res []byte) (Settings, error) {
	p, err := checkResult(res, opConfig)
	if err != nil {
		return Settings{}, err
	}
	d := decoder{rest: p}
	u := d.settings()
	if d.err != nil || len(d.rest) != 0 {
		return Settings{}, fmt.Errorf("%w: configure payload % x", errBadResult, p)
	}
	return u.Settings, nil
}

// countResult is the result of the commands that answer a count (Purge,
// Redrive, Import, OutDone): uvarint n, byte more.
func countResult(op byte, n uint64, more bool) []byte {
	return append(binary.AppendUvarint(okResult(op, binary.MaxVarintLen64+1), n), boolByte(more))
}

func decodeCountResult(res []byte, op byte) (n uint64, more bool, err error) {
	p, err := checkResult(res, op)
	if err != nil {
		return 0, false, err
	}
	n, rest, err := readUvarint(p)
	if err != nil || len(rest) != 1 || rest[0] > 1 {
		return 0, false, fmt.Errorf("%w: payload % x", errBadResult, p)
	}
	return n, rest[0] == 1, nil
}

func decodeOKResult(res []byte, op byte) error {
	p, err := checkResult(res, op)
	if err == nil && len(p) != 0 {
		err = fmt.Errorf("%w: payload % x", errBadResult, p)
	}
	return err
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
