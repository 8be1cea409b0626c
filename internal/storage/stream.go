package storage

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"slices"
)

// Snapshot stream format (all of it covered by the trailing checksum):
//
//	magic    "PRLYSNP1"
//	pairs    repeated: 0x01 <uvarint len(key)> key <uvarint len(value)> value
//	end      0x00 <uvarint number of pairs>
//	checksum CRC-32C (Castagnoli) of every byte above, 4 bytes big-endian
//
// Keys are relative to the group, so a stream taken from one group can be installed into
// another.
const (
	streamMagic   = "PRLYSNP1"
	recordPair    = 0x01
	recordEnd     = 0x00
	maxStreamKey  = 1 << 20 // 1 MiB
	maxStreamVal  = 1 << 30 // 1 GiB
	readChunkSize = 1 << 20 // values are read in chunks so a corrupt length cannot allocate much
)

// castagnoli is the CRC-32C table (computed once per call site; crc32.MakeTable caches it).
func castagnoli() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) }

// streamWriter encodes a snapshot stream.
type streamWriter struct {
	w     *bufio.Writer
	crc   hash.Hash32
	count uint64
	buf   [1 + 2*binary.MaxVarintLen64]byte
}

// newStreamWriter starts a stream on w by writing the magic.
func newStreamWriter(w io.Writer) (*streamWriter, error) {
	sw := &streamWriter{w: bufio.NewWriterSize(w, 256<<10), crc: crc32.New(castagnoli())}
	if err := sw.write([]byte(streamMagic)); err != nil {
		return nil, err
	}
	return sw, nil
}

// write writes b and adds it to the checksum.
func (sw *streamWriter) write(b []byte) error {
	_, _ = sw.crc.Write(b)
	if _, err := sw.w.Write(b); err != nil {
		return fmt.Errorf("write snapshot stream: %w", err)
	}
	return nil
}

// pair writes one key/value pair.
func (sw *streamWriter) pair(k, v []byte) error {
	sw.buf[0] = recordPair
	n := 1 + binary.PutUvarint(sw.buf[1:], uint64(len(k)))
	if err := sw.write(sw.buf[:n]); err != nil {
		return err
	}
	if err := sw.write(k); err != nil {
		return err
	}
	n = binary.PutUvarint(sw.buf[:], uint64(len(v)))
	if err := sw.write(sw.buf[:n]); err != nil {
		return err
	}
	sw.count++
	return sw.write(v)
}

// finish writes the terminator and the checksum and flushes.
func (sw *streamWriter) finish() error {
	sw.buf[0] = recordEnd
	n := 1 + binary.PutUvarint(sw.buf[1:], sw.count)
	if err := sw.write(sw.buf[:n]); err != nil {
		return err
	}
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], sw.crc.Sum32())
	if _, err := sw.w.Write(sum[:]); err != nil {
		return fmt.Errorf("write snapshot stream: %w", err)
	}
	if err := sw.w.Flush(); err != nil {
		return fmt.Errorf("write snapshot stream: %w", err)
	}
	return nil
}

// crcReader reads bytes and checksums them.
type crcReader struct {
	r   io.ByteReader
	rr  io.Reader
	crc hash.Hash32
	one [1]byte
}

// ReadByte implements io.ByteReader.
func (c *crcReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err != nil {
		return 0, err
	}
	c.one[0] = b
	_, _ = c.crc.Write(c.one[:])
	return b, nil
}

// readFull reads exactly len(p) bytes.
func (c *crcReader) readFull(p []byte) error {
	if _, err := io.ReadFull(c.rr, p); err != nil {
		return err
	}
	_, _ = c.crc.Write(p)
	return nil
}

// readBytes reads n bytes into buf (reusing its capacity), growing it chunk by chunk so that
// a corrupt length fails at the end of the stream instead of allocating up front.
func (c *crcReader) readBytes(buf []byte, n uint64) ([]byte, error) {
	buf = buf[:0]
	for uint64(len(buf)) < n {
		chunk := min(n-uint64(len(buf)), readChunkSize)
		start := len(buf)
		buf = slices.Grow(buf, int(chunk))[:start+int(chunk)]
		if err := c.readFull(buf[start:]); err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// readStream decodes a snapshot stream from r, calling fn for every pair (k and v are valid
// only during the call). It returns an error wrapping ErrCorruptSnapshot if the stream is
// malformed, truncated or fails its checksum, and fn's error unchanged. If r is not an
// io.ByteReader it is buffered, so bytes past the end of the stream may be consumed.
func readStream(r io.Reader, fn func(k, v []byte) error) error {
	br, ok := r.(interface {
		io.Reader
		io.ByteReader
	})
	if !ok {
		br = bufio.NewReaderSize(r, 256<<10)
	}
	c := &crcReader{r: br, rr: br, crc: crc32.New(castagnoli())}
	corrupt := func(what string, err error) error {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return fmt.Errorf("%s: %v: %w", what, err, ErrCorruptSnapshot)
		}
		return fmt.Errorf("%s: %w", what, ErrCorruptSnapshot)
	}

	var magic [len(streamMagic)]byte
	if err := c.readFull(magic[:]); err != nil {
		return corrupt("read magic", err)
	}
	if string(magic[:]) != streamMagic {
		return corrupt("bad magic", nil)
	}
	var key, val []byte
	var count uint64
	for {
		kind, err := c.ReadByte()
		if err != nil {
			return corrupt("read record", err)
		}
		if kind == recordEnd {
			break
		}
		if kind != recordPair {
			return corrupt(fmt.Sprintf("unknown record kind %#x", kind), nil)
		}
		n, err := binary.ReadUvarint(c)
		if err != nil || n > maxStreamKey {
			return corrupt("read key length", err)
		}
		if key, err = c.readBytes(key, n); err != nil {
			return corrupt("read key", err)
		}
		if n, err = binary.ReadUvarint(c); err != nil || n > maxStreamVal {
			return corrupt("read value length", err)
		}
		if val, err = c.readBytes(val, n); err != nil {
			return corrupt("read value", err)
		}
		if err := fn(key, val); err != nil {
			return err
		}
		count++
	}
	n, err := binary.ReadUvarint(c)
	if err != nil {
		return corrupt("read pair count", err)
	}
	if n != count {
		return corrupt(fmt.Sprintf("stream announces %d pairs, carried %d", n, count), nil)
	}
	want := c.crc.Sum32()
	var sum [4]byte
	if _, err := io.ReadFull(br, sum[:]); err != nil {
		return corrupt("read checksum", err)
	}
	if got := binary.BigEndian.Uint32(sum[:]); got != want {
		return corrupt(fmt.Sprintf("checksum %08x, computed %08x", got, want), nil)
	}
	return nil
}
