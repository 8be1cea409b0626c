package partition

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/parley-chat/parley/internal/compat"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/transport"
	"github.com/parley-chat/parley/internal/wire"
)

// The request path's calls in the binary encoding: the request as
// AppendProposeRequest or AppendReadRequest writes it, answered with a
// Reply as AppendReply writes it. New at protocol 2 (BinaryProtocol): the
// router sends them only to a cluster that speaks 2, and a forwarded put or
// remote read then costs no JSON (no base64 of the command, keys and
// results, no reflection).
const (
	MethodProposeBin = "propose.b" // MethodPropose in binary
	MethodGetBin     = "get.b"     // MethodGet in binary
	MethodScanBin    = "scan.b"    // MethodScan in binary
)

// BinaryProtocol is the internal protocol that brings the binary calls.
const BinaryProtocol = 2

// binaryOf names the binary call of each JSON call that has one: the one
// list of the binary calls.
var binaryOf = map[string]string{MethodPropose: MethodProposeBin, MethodGet: MethodGetBin, MethodScan: MethodScanBin}

// callPreferBinary makes the call method (a JSON call with a binary one in
// binaryOf): binary, its body built by binBody, when useBinary, else JSON,
// its body built by jsonBody. A node rolled back to a build without the
// binary calls, before gossip says so, refuses one as a request (a remote
// error) or, while it starts, answers it in JSON (a reply that does not
// decode): either way it did nothing, and the call is sent again in JSON
// at once. (Were a reply garbled after the work was done, the JSON retry
// is still safe: a proposal keeps its id, so the dedup records answer it,
// and reads change nothing.) binaryOK reports whether the binary call was
// answered; false tells a caller that asked for binary to stop asking this
// node.
func callPreferBinary(ctx context.Context, c Caller, addr, method string, useBinary bool, binBody, jsonBody func() []byte, rep *Reply) (binaryOK bool, err error) {
	if useBinary {
		err := Call(ctx, c, addr, binaryOf[method], binBody(), rep)
		var remote *transport.RemoteError
		if !errors.As(err, &remote) && !errors.Is(err, errMalformedCall) {
			return true, err
		}
	}
	return false, Call(ctx, c, addr, method, jsonBody(), rep)
}

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
// (AppendReply) rather than JSON: the binary calls of binaryOf do. The node's
// answer (EncodeReply) and the caller's reading (Call) both ask it.
func binaryReply(method string) bool {
	for _, bin := range binaryOf {
		if method == bin {
			return true
		}
	}
	return false
}

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
	f := fieldReader{b: b}
	req := ProposeRequest{Group: f.uvarint(), ID: f.bytes()}
	if f.err != nil {
		return ProposeRequest{}, f.err
	}
	if len(f.b) > 0 {
		req.Cmd = f.b
	}
	return req, nil
}

// flag returns bit when present, else 0: one field's part of a mask of the
// fields present.
func flag(bit uint64, present bool) uint64 {
	if present {
		return bit
	}
	return 0
}

// The optional fields of a binary ReadRequest, one bit each in the uvarint
// after its group; a field is present when its bit is set, and the ones
// with bytes follow in bit order.
const (
	readLinearizable = 1 << iota // no bytes
	readKey                      // uvarint-length bytes
	readHi                       // uvarint-length bytes
	readLimit                    // uvarint
	readSession                  // uvarint
	readHold                     // no bytes
	readSame                     // no bytes
	readAt                       // uvarint
	readFields       = iota
)

// AppendReadRequest appends req in the binary encoding: uvarint group, a
// uvarint of the fields present, then each present field in bit order. An
// empty key or bound is absent, as in JSON.
func AppendReadRequest(b []byte, req ReadRequest) []byte {
	mask := flag(readLinearizable, req.Linearizable) | flag(readKey, len(req.Key) > 0) | flag(readHi, len(req.Hi) > 0) |
		flag(readLimit, req.Limit > 0) | flag(readSession, req.Session != 0) | flag(readHold, req.Hold) |
		flag(readSame, req.Same) | flag(readAt, req.At != 0)
	b = binary.AppendUvarint(b, req.Group)
	b = binary.AppendUvarint(b, mask)
	if mask&readKey != 0 {
		b = wire.AppendBytes(b, req.Key)
	}
	if mask&readHi != 0 {
		b = wire.AppendBytes(b, req.Hi)
	}
	if mask&readLimit != 0 {
		b = binary.AppendUvarint(b, uint64(req.Limit))
	}
	if mask&readSession != 0 {
		b = binary.AppendUvarint(b, req.Session)
	}
	if mask&readAt != 0 {
		b = binary.AppendUvarint(b, req.At)
	}
	return b
}

// DecodeReadRequest reads a request AppendReadRequest wrote. Key and Hi
// alias b.
func DecodeReadRequest(b []byte) (ReadRequest, error) {
	f := fieldReader{b: b}
	req := ReadRequest{Group: f.uvarint()}
	mask := f.mask(readFields, "read request")
	req.Linearizable, req.Hold, req.Same = mask&readLinearizable != 0, mask&readHold != 0, mask&readSame != 0
	if mask&readKey != 0 {
		req.Key = f.bytes()
	}
	if mask&readHi != 0 {
		req.Hi = f.bytes()
	}
	if mask&readLimit != 0 {
		n := f.uvarint()
		if n > math.MaxInt32 {
			return ReadRequest{}, fmt.Errorf("%w: limit %d", errMalformedCall, n)
		}
		req.Limit = int(n)
	}
	if mask&readSession != 0 {
		req.Session = f.uvarint()
	}
	if mask&readAt != 0 {
		req.At = f.uvarint()
	}
	if err := f.end("read request"); err != nil {
		return ReadRequest{}, err
	}
	return req, nil
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

// replyTag begins every binary Reply. No JSON text begins with it, so a
// JSON answer to a binary call (a node of an older build answering "node
// starting" to any call) is refused as malformed rather than misread.
const replyTag byte = 0xB1

// AppendReply appends r in the binary encoding: replyTag, a uvarint of the
// fields present, then each present field in bit order. A present Result
// may be empty; it is absent only when nil.
func AppendReply(b []byte, r Reply) []byte {
	mask := flag(replyResult, r.Result != nil) | flag(replyCode, r.Code != "") | flag(replyMessage, r.Message != "") |
		flag(replyNotLeader, r.NotLeader) | flag(replyLeader, r.Leader != 0) | flag(replyEngine, r.Engine != "") |
		flag(replyStaleMs, r.StaleMs != 0) | flag(replyApplied, r.Applied != 0) | flag(replySession, r.Session != 0)
	b = append(b, replyTag)
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
	if len(b) == 0 || b[0] != replyTag {
		return fmt.Errorf("%w: not a binary reply", errMalformedCall)
	}
	f := fieldReader{b: b[1:]}
	mask := f.mask(replyFields, "reply")
	if mask&replyResult != 0 {
		if r.Result = f.bytes(); r.Result == nil {
			r.Result = []byte{}
		}
	}
	if mask&replyCode != 0 {
		r.Code = errs.Code(f.bytes())
	}
	if mask&replyMessage != 0 {
		r.Message = string(f.bytes())
	}
	r.NotLeader = mask&replyNotLeader != 0
	if mask&replyLeader != 0 {
		r.Leader = f.uvarint()
	}
	if mask&replyEngine != 0 {
		r.Engine = string(f.bytes())
	}
	if mask&replyStaleMs != 0 {
		r.StaleMs = f.varint()
	}
	if mask&replyApplied != 0 {
		r.Applied = f.uvarint()
	}
	if mask&replySession != 0 {
		r.Session = f.uvarint()
	}
	return f.end("reply")
}

// fieldReader reads the fields of a binary call body in turn. After the
// first error every read returns zero, and end reports it.
type fieldReader struct {
	b   []byte
	err error
}

func (f *fieldReader) uvarint() uint64 {
	var v uint64
	if f.err == nil {
		v, f.b, f.err = wire.Uvarint(f.b, errMalformedCall)
	}
	return v
}

func (f *fieldReader) varint() int64 {
	if f.err != nil {
		return 0
	}
	v, n := binary.Varint(f.b)
	if n <= 0 {
		f.err = fmt.Errorf("%w: bad varint", errMalformedCall)
		return 0
	}
	f.b = f.b[n:]
	return v
}

// bytes reads a uvarint length and that many bytes, aliasing the body;
// nil for none.
func (f *fieldReader) bytes() []byte {
	var v []byte
	if f.err == nil {
		v, f.b, f.err = wire.Bytes(f.b, errMalformedCall)
	}
	return v
}

// mask reads the uvarint of the fields present, refusing bits at or past
// fields (the fields this build knows); what names the body in the error.
func (f *fieldReader) mask(fields int, what string) uint64 {
	m := f.uvarint()
	if f.err == nil && m>>fields != 0 {
		f.err = fmt.Errorf("%w: unknown %s fields %#x", errMalformedCall, what, m)
	}
	return m
}

// end returns the first error, or one for bytes left after the body.
func (f *fieldReader) end(what string) error {
	if f.err == nil && len(f.b) != 0 {
		f.err = fmt.Errorf("%w: %d bytes after the %s", errMalformedCall, len(f.b), what)
	}
	return f.err
}
