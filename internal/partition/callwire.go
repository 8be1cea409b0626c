package partition

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/parley-chat/parley/internal/compat"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/wire"
)

// MethodProposeBin is the propose call in the binary encoding: a
// ProposeRequest as AppendProposeRequest writes it, answered with a Reply as
// AppendReply writes it. New at protocol 2 (BinaryProtocol): the router
// sends it only to a cluster that speaks 2, and a forwarded put then costs
// no JSON (no base64 of the command and result, no reflection).
const MethodProposeBin = "propose.b"

// BinaryProtocol is the internal protocol that brings MethodProposeBin.
const BinaryProtocol = 2

// errBinaryOff ends a binary attempt before it starts: the cluster does not
// speak BinaryProtocol yet.
var errBinaryOff = errors.New("partition: the cluster does not speak the binary calls yet")

// protocolCache remembers the cluster's protocol for a second, so that a
// forwarded proposal does not walk the cluster map and gossip each time.
type protocolCache struct {
	protocol atomic.Int64
	checked  atomic.Int64 // unix ns of the last look; 0: never
}

// atLeast reports whether the cluster speaks need, asking get (nil: every
// node speaks this build's protocol) at most once a second.
func (c *protocolCache) atLeast(need int, get func() int) bool {
	if get == nil {
		return compat.Protocol >= need
	}
	if now := time.Now().UnixNano(); now-c.checked.Load() > int64(time.Second) {
		c.protocol.Store(int64(get()))
		c.checked.Store(now)
	}
	return c.protocol.Load() >= int64(need)
}

// errMalformedCall wraps every decoding error of the binary call bodies.
var errMalformedCall = errors.New("malformed binary call body")

// binaryReply reports whether method answers in the binary Reply encoding
// (AppendReply) rather than JSON: the one place that says so, for the
// node's answer (EncodeReply) and the caller's reading (Call) alike.
func binaryReply(method string) bool { return method == MethodProposeBin }

// EncodeReply encodes rep as the answer to method: binary for the binary
// methods, JSON for every other.
func EncodeReply(method string, rep Reply) ([]byte, error) {
	if binaryReply(method) {
		return AppendReply(nil, rep), nil
	}
	return json.Marshal(rep)
}

// decodeReply reads the answer b to method into rep.
func decodeReply(method string, b []byte, rep *Reply) error {
	if binaryReply(method) {
		return DecodeReply(b, rep)
	}
	return json.Unmarshal(b, rep)
}

// AppendProposeRequest appends req in the binary encoding: uvarint group,
// uvarint-length id, then the command to the end.
func AppendProposeRequest(b []byte, req ProposeRequest) []byte {
	b = binary.AppendUvarint(b, req.Group)
	b = wire.AppendBytes(b, req.ID)
	return append(b, req.Cmd...)
}

// DecodeProposeRequest reads a request AppendProposeRequest wrote. The id
// and command alias b.
func DecodeProposeRequest(b []byte) (ProposeRequest, error) {
	g, rest, err := wire.Uvarint(b, errMalformedCall)
	if err != nil {
		return ProposeRequest{}, err
	}
	id, rest, err := wire.Bytes(rest, errMalformedCall)
	if err != nil {
		return ProposeRequest{}, err
	}
	if len(rest) == 0 {
		rest = nil
	}
	return ProposeRequest{Group: g, ID: id, Cmd: rest}, nil
}

// The fields of a binary Reply, one bit each in its leading uvarint; a
// field is present when its bit is set, and then follows in bit order.
const (
	replyResult    = 1 << iota // uvarint-length bytes
	replyCode                  // uvarint-length string
	replyMessage               // uvarint-length string
	replyNotLeader             // no bytes: the bit is the value
	replyLeader                // uvarint
	replyEngine                // uvarint-length string
	replyStaleMs               // zigzag varint
	replyApplied               // uvarint
	replySession               // uvarint
	replyFields    = iota
)

// AppendReply appends r in the binary encoding: a uvarint of the fields
// present, then each present field in bit order. A present Result may be
// empty; it is absent only when nil.
func AppendReply(b []byte, r Reply) []byte {
	var mask uint64
	set := func(bit uint64, present bool) {
		if present {
			mask |= bit
		}
	}
	set(replyResult, r.Result != nil)
	set(replyCode, r.Code != "")
	set(replyMessage, r.Message != "")
	set(replyNotLeader, r.NotLeader)
	set(replyLeader, r.Leader != 0)
	set(replyEngine, r.Engine != "")
	set(replyStaleMs, r.StaleMs != 0)
	set(replyApplied, r.Applied != 0)
	set(replySession, r.Session != 0)
	b = binary.AppendUvarint(b, mask)
	if mask&replyResult != 0 {
		b = wire.AppendBytes(b, r.Result)
	}
	if mask&replyCode != 0 {
		b = wire.AppendString(b, string(r.Code))
	}
	if mask&replyMessage != 0 {
		b = wire.AppendString(b, r.Message)
	}
	if mask&replyLeader != 0 {
		b = binary.AppendUvarint(b, r.Leader)
	}
	if mask&replyEngine != 0 {
		b = wire.AppendString(b, r.Engine)
	}
	if mask&replyStaleMs != 0 {
		b = binary.AppendVarint(b, r.StaleMs)
	}
	if mask&replyApplied != 0 {
		b = binary.AppendUvarint(b, r.Applied)
	}
	if mask&replySession != 0 {
		b = binary.AppendUvarint(b, r.Session)
	}
	return b
}

// DecodeReply reads a Reply AppendReply wrote into r. Result aliases b. A
// field bit this build does not know is an error: the encoding has no way
// to skip it.
func DecodeReply(b []byte, r *Reply) error {
	*r = Reply{}
	mask, b, err := wire.Uvarint(b, errMalformedCall)
	if err != nil {
		return err
	}
	if mask>>replyFields != 0 {
		return fmt.Errorf("%w: unknown reply fields %#x", errMalformedCall, mask)
	}
	str := func() string {
		var s []byte
		if err == nil {
			s, b, err = wire.Bytes(b, errMalformedCall)
		}
		return string(s)
	}
	uv := func() uint64 {
		var v uint64
		if err == nil {
			v, b, err = wire.Uvarint(b, errMalformedCall)
		}
		return v
	}
	if mask&replyResult != 0 {
		if r.Result, b, err = wire.Bytes(b, errMalformedCall); err == nil && r.Result == nil {
			r.Result = []byte{}
		}
	}
	if mask&replyCode != 0 {
		r.Code = errs.Code(str())
	}
	if mask&replyMessage != 0 {
		r.Message = str()
	}
	r.NotLeader = mask&replyNotLeader != 0
	if mask&replyLeader != 0 {
		r.Leader = uv()
	}
	if mask&replyEngine != 0 {
		r.Engine = str()
	}
	if mask&replyStaleMs != 0 && err == nil {
		v, n := binary.Varint(b)
		if n <= 0 {
			return fmt.Errorf("%w: bad varint", errMalformedCall)
		}
		r.StaleMs, b = v, b[n:]
	}
	if mask&replyApplied != 0 {
		r.Applied = uv()
	}
	if mask&replySession != 0 {
		r.Session = uv()
	}
	if err != nil {
		return err
	}
	if len(b) != 0 {
		return fmt.Errorf("%w: %d bytes after the reply", errMalformedCall, len(b))
	}
	return nil
}
