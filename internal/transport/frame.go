package transport

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Protocol bytes: the first byte a dialer writes on a new connection.
const (
	protoRaft     byte = 'R'
	protoCall     byte = 'C'
	protoSnapshot byte = 'S'
)

// Frame size limits. A frame whose length prefix exceeds its limit closes the
// connection: the stream cannot be resynchronised and the peer is either
// broken or hostile.
const (
	frameHeaderLen    = 4
	maxHandshakeFrame = 4 << 10
	maxRaftFrame      = 64 << 20
	maxCallFrame      = 16 << 20
	maxSnapChunk      = 16 << 20
)

// Buffer sizes for connection readers.
const (
	raftReadBuffer = 256 << 10
	callReadBuffer = 64 << 10
	snapReadBuffer = 256 << 10
	// maxRetainedBuffer is the largest scratch buffer kept between frames;
	// larger ones are released after use so one huge batch does not pin
	// memory for the life of a connection.
	maxRetainedBuffer = 4 << 20
)

// errFrameTooLarge is returned by readFrame for a length prefix above the
// limit.
var errFrameTooLarge = errors.New("frame too large")

// appendFrameHeader appends the 4-byte big-endian length prefix of a frame
// whose payload is n bytes long.
func appendFrameHeader(dst []byte, n int) []byte {
	return binary.BigEndian.AppendUint32(dst, uint32(n))
}

// putFrameHeader writes the length prefix for a payload of n bytes into the
// first four bytes of dst, which were reserved earlier.
func putFrameHeader(dst []byte, n int) {
	binary.BigEndian.PutUint32(dst, uint32(n))
}

// readFrame reads one length-prefixed frame from r. It returns the payload,
// stored in buf when buf is large enough and in a new slice otherwise. A
// frame longer than limit fails with an error wrapping errFrameTooLarge.
func readFrame(r *bufio.Reader, buf []byte, limit int) ([]byte, error) {
	n, err := readFrameLen(r, limit)
	if err != nil {
		return nil, err
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, noEOF(err)
	}
	return buf, nil
}

// readFrameLen reads a frame's length prefix and checks it against limit.
func readFrameLen(r *bufio.Reader, limit int) (int, error) {
	hdr, err := r.Peek(frameHeaderLen)
	if err != nil {
		if len(hdr) > 0 {
			err = noEOF(err)
		}
		return 0, err
	}
	n := int(binary.BigEndian.Uint32(hdr))
	if _, err := r.Discard(frameHeaderLen); err != nil {
		return 0, err
	}
	if n > limit {
		return 0, fmt.Errorf("%w: %d bytes, limit %d", errFrameTooLarge, n, limit)
	}
	return n, nil
}

// noEOF turns io.EOF inside a frame into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// appendString appends s with a uvarint length prefix.
func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// errCorrupt is wrapped by every decoding error of a malformed frame.
var errCorrupt = errors.New("corrupt frame")

// decoder reads the fields of a frame payload. The first failure sticks in
// err, so callers check it once after reading every field.
type decoder struct {
	p   []byte
	err error
}

// uvarint reads one uvarint.
func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.p)
	if n <= 0 {
		d.err = fmt.Errorf("%w: bad uvarint", errCorrupt)
		return 0
	}
	d.p = d.p[n:]
	return v
}

// byte1 reads one byte.
func (d *decoder) byte1() byte {
	if d.err != nil {
		return 0
	}
	if len(d.p) == 0 {
		d.err = fmt.Errorf("%w: short frame", errCorrupt)
		return 0
	}
	b := d.p[0]
	d.p = d.p[1:]
	return b
}

// bytes reads a uvarint length followed by that many bytes, aliasing the
// payload.
func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.p)) {
		d.err = fmt.Errorf("%w: length %d beyond frame", errCorrupt, n)
		return nil
	}
	b := d.p[:n:n]
	d.p = d.p[n:]
	return b
}

// rest returns the unread remainder of the payload.
func (d *decoder) rest() []byte {
	if d.err != nil {
		return nil
	}
	b := d.p
	d.p = nil
	return b
}
