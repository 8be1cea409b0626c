package transport

import (
	"encoding/binary"
	"fmt"

	"go.etcd.io/raft/v3/raftpb"
)

// GroupMessage is one Raft message addressed to one Raft group.
type GroupMessage struct {
	// Group is the Raft group (partition) the message belongs to.
	Group uint64
	// Msg is the Raft message itself.
	Msg raftpb.Message
}

// raftEncoder turns queued messages into raft batch frames. It keeps its
// scratch buffers between calls; it is owned by one sender goroutine.
type raftEncoder struct {
	sizes []int
	buf   []byte
}

// encodedBatch describes the result of raftEncoder.encode.
type encodedBatch struct {
	data    []byte // one or more complete frames, ready for a single Write
	frames  int    // number of frames in data
	sent    int    // messages encoded
	skipped int    // messages larger than a frame, not encoded
}

// encode marshals msgs, in order, into frames of at most maxPayload bytes of
// payload each. Every message is marshalled exactly once, straight into the
// output buffer. The returned data aliases the encoder's buffer and is valid
// until the next call.
//
// Frame payload: uvarint count, then per message uvarint group, uvarint
// length and the marshalled raftpb.Message.
func (e *raftEncoder) encode(msgs []GroupMessage, maxPayload int) (encodedBatch, error) {
	var out encodedBatch
	e.sizes = e.sizes[:0]
	for i := range msgs {
		e.sizes = append(e.sizes, msgs[i].Msg.Size())
	}
	buf := e.buf[:0]
	for i := 0; i < len(msgs); {
		payload, j := 0, i
		for ; j < len(msgs); j++ {
			n := entryLen(msgs[j].Group, e.sizes[j])
			if payload+n+binary.MaxVarintLen64 > maxPayload {
				break
			}
			payload += n
		}
		if j == i {
			out.skipped++
			i++
			continue
		}
		count := j - i
		payload += uvarintLen(uint64(count))
		buf = appendFrameHeader(buf, payload)
		buf = binary.AppendUvarint(buf, uint64(count))
		for k := i; k < j; k++ {
			var err error
			if buf, err = appendMessage(buf, &msgs[k], e.sizes[k]); err != nil {
				e.buf = buf
				return encodedBatch{}, err
			}
		}
		out.frames++
		out.sent += count
		i = j
	}
	e.buf = buf
	out.data = buf
	return out, nil
}

// release drops the encoder's buffer when a large batch made it big.
func (e *raftEncoder) release() {
	if cap(e.buf) > maxRetainedBuffer {
		e.buf = nil
	}
}

// appendMessage appends one batch entry whose marshalled size is size.
func appendMessage(buf []byte, gm *GroupMessage, size int) ([]byte, error) {
	buf = binary.AppendUvarint(buf, gm.Group)
	buf = binary.AppendUvarint(buf, uint64(size))
	return appendMarshalled(buf, &gm.Msg, size)
}

// appendMarshalled marshals m, whose size is size, straight into buf.
func appendMarshalled(buf []byte, m *raftpb.Message, size int) ([]byte, error) {
	start := len(buf)
	buf = grow(buf, size)
	n, err := m.MarshalToSizedBuffer(buf[start : start+size])
	if err != nil {
		return buf[:start], fmt.Errorf("transport: marshal raft message: %w", err)
	}
	if n != size {
		return buf[:start], fmt.Errorf("transport: marshal raft message: wrote %d bytes, expected %d", n, size)
	}
	return buf, nil
}

// grow extends buf by n bytes, reallocating when needed.
func grow(buf []byte, n int) []byte {
	if cap(buf)-len(buf) < n {
		nb := make([]byte, len(buf), 2*cap(buf)+n)
		copy(nb, buf)
		buf = nb
	}
	return buf[:len(buf)+n]
}

// entryLen is the encoded length of one batch entry.
func entryLen(group uint64, size int) int {
	return uvarintLen(group) + uvarintLen(uint64(size)) + size
}

// uvarintLen is the length of v encoded as a uvarint.
func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// decodeRaftBatch decodes the payload of one raft batch frame. The returned
// messages do not alias p: raftpb's Unmarshal copies byte fields, so p may be
// reused afterwards.
func decodeRaftBatch(p []byte) ([]GroupMessage, error) {
	d := decoder{p: p}
	count := d.uvarint()
	if d.err != nil {
		return nil, d.err
	}
	// Every entry takes at least two bytes (group and length), which bounds
	// the allocation below by the frame size.
	if count > uint64(len(d.p)/2) {
		return nil, fmt.Errorf("%w: %d messages cannot fit in %d bytes", errCorrupt, count, len(d.p))
	}
	msgs := make([]GroupMessage, count)
	for i := range msgs {
		msgs[i].Group = d.uvarint()
		b := d.bytes()
		if d.err != nil {
			return nil, d.err
		}
		if err := msgs[i].Msg.Unmarshal(b); err != nil {
			return nil, fmt.Errorf("%w: message %d: %w", errCorrupt, i, err)
		}
	}
	if len(d.p) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errCorrupt, len(d.p))
	}
	return msgs, nil
}
