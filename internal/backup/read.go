package backup

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
)

// Visitor receives what Read finds, in file order. Nil fields are skipped.
// An error a callback returns stops Read and is returned as it came.
type Visitor struct {
	// Header is called once, first.
	Header func(Header) error
	// Section is called at the start of each group's section.
	Section func(group, applied uint64) error
	// Pair is called for each pair of the current section, in key order.
	// k and v are valid only during the call.
	Pair func(k, v []byte) error
	// SectionEnd is called once the section's checksum matched.
	SectionEnd func(SectionInfo) error
}

// Read reads a whole backup file from r, checking as it goes: the magic,
// the header's and every section's checksum, that the sections are of
// groups 0..P in order, that each holds whole records in key order, the
// trailer's section count and the whole file's checksum, and that nothing
// follows. Callbacks see a section's pairs before its checksum is checked:
// a caller that must not act on a corrupt file reads it twice (Verify
// first). Every error about the file wraps ErrCorrupt, except a header of
// an unknown format version.
func Read(r io.Reader, v Visitor) (*Summary, error) {
	hr := newHashReader(r)
	hr.file = sha256.New()
	magic := make([]byte, len(Magic))
	if err := hr.readFull(magic); err != nil || string(magic) != Magic {
		return nil, corruptf("not a Parley backup file (bad magic)")
	}
	h, err := readHeader(hr)
	if err != nil {
		return nil, err
	}
	sum := &Summary{Header: h}
	if v.Header != nil {
		if err := v.Header(h); err != nil {
			return nil, err
		}
	}
	for g := uint64(0); g <= uint64(h.Partitions); g++ {
		info, err := readSection(hr, &v)
		if err != nil {
			return nil, err
		}
		if info.Group != g {
			return nil, corruptf("section of group %d where group %d was expected", info.Group, g)
		}
		sum.Sections = append(sum.Sections, info)
		if v.SectionEnd != nil {
			if err := v.SectionEnd(info); err != nil {
				return nil, err
			}
		}
	}
	if err := readTrailer(hr, len(sum.Sections)); err != nil {
		return nil, err
	}
	sum.FileBytes = hr.n
	sum.SHA256 = hex.EncodeToString(hr.fileSum)
	return sum, nil
}

// Verify reads a whole file and returns its summary, or why it is corrupt.
func Verify(r io.Reader) (*Summary, error) { return Read(r, Visitor{}) }

// readHeader reads and checks the header block.
func readHeader(hr *hashReader) (Header, error) {
	var h Header
	hr.sec = sha256.New()
	kind, err := hr.ReadByte()
	if err != nil || kind != blockHeader {
		return h, corruptf("no header block")
	}
	n, err := hr.uvarint()
	if err != nil || n > maxHeader {
		return h, corruptf("header length")
	}
	body, err := hr.bytes(n)
	if err != nil {
		return h, corruptf("header: %v", err)
	}
	if err := hr.checkSum("header"); err != nil {
		return h, err
	}
	if err := json.Unmarshal(body, &h); err != nil {
		return h, corruptf("header: %v", err)
	}
	return h, h.validate()
}

// readSection reads one section, calling v's Section and Pair (v may be
// nil), and checks its checksum.
func readSection(hr *hashReader, v *Visitor) (SectionInfo, error) {
	var info SectionInfo
	hr.sec = sha256.New()
	kind, err := hr.ReadByte()
	if err != nil {
		return info, corruptf("truncated: a section is missing")
	}
	if kind != blockSection {
		return info, corruptf("a section is missing (found block %q)", kind)
	}
	if info.Group, err = hr.uvarint(); err == nil {
		info.Applied, err = hr.uvarint()
	}
	if err != nil {
		return info, corruptf("section header: %v", err)
	}
	if v != nil && v.Section != nil {
		if err := v.Section(info.Group, info.Applied); err != nil {
			return info, err
		}
	}
	var prev []byte
	for {
		rec, err := hr.ReadByte()
		if err != nil {
			return info, corruptf("group %d: truncated after %d pairs", info.Group, info.Keys)
		}
		if rec == recordEnd {
			break
		}
		if rec != recordPair {
			return info, corruptf("group %d: unknown record %#x", info.Group, rec)
		}
		k, val, err := hr.pair()
		if err != nil {
			return info, corruptf("group %d: pair %d: %v", info.Group, info.Keys+1, err)
		}
		if info.Keys > 0 && bytes.Compare(prev, k) >= 0 {
			return info, corruptf("group %d: keys out of order at pair %d", info.Group, info.Keys+1)
		}
		prev = append(prev[:0], k...)
		info.Keys++
		info.Bytes += uint64(len(k) + len(val))
		if v != nil && v.Pair != nil {
			if err := v.Pair(k, val); err != nil {
				return info, err
			}
		}
	}
	count, err := hr.uvarint()
	if err != nil {
		return info, corruptf("group %d: truncated end record", info.Group)
	}
	if count != info.Keys {
		return info, corruptf("group %d: %d pairs, the end record says %d", info.Group, info.Keys, count)
	}
	return info, hr.checkSum(fmt.Sprintf("group %d", info.Group))
}

// readTrailer reads the end block and the whole file's checksum, and
// checks that nothing follows.
func readTrailer(hr *hashReader, sections int) error {
	hr.sec = nil
	kind, err := hr.ReadByte()
	if err != nil || kind != blockEnd {
		return corruptf("truncated: the end block is missing")
	}
	n, err := hr.uvarint()
	if err != nil || n != uint64(sections) {
		return corruptf("the end block counts %d sections, the file holds %d", n, sections)
	}
	want := hr.file.Sum(nil)
	got := make([]byte, sumSize)
	if err := hr.readRaw(got); err != nil {
		return corruptf("truncated: the file checksum is missing")
	}
	if !bytes.Equal(got, want) {
		return corruptf("the whole-file checksum does not match")
	}
	hr.fileSum = got
	if _, err := hr.r.ReadByte(); err != io.EOF {
		return corruptf("bytes after the end of the backup")
	}
	return nil
}

// hashReader reads a backup, adding every byte to the file's checksum (when
// set) and the current block's (when set), and counting them.
type hashReader struct {
	r       *bufio.Reader
	file    hash.Hash
	sec     hash.Hash
	n       int64
	fileSum []byte
	kv      []byte // reused buffer of the current pair
}

func newHashReader(r io.Reader) *hashReader {
	return &hashReader{r: bufio.NewReaderSize(r, 256<<10)}
}

// note adds read bytes to the checksums.
func (h *hashReader) note(b []byte) {
	h.n += int64(len(b))
	if h.file != nil {
		_, _ = h.file.Write(b)
	}
	if h.sec != nil {
		_, _ = h.sec.Write(b)
	}
}

// ReadByte implements io.ByteReader.
func (h *hashReader) ReadByte() (byte, error) {
	c, err := h.r.ReadByte()
	if err == nil {
		h.note([]byte{c})
	}
	return c, err
}

func (h *hashReader) readFull(p []byte) error {
	if _, err := io.ReadFull(h.r, p); err != nil {
		return err
	}
	h.note(p)
	return nil
}

// readRaw reads a checksum: counted in the file's checksum only.
func (h *hashReader) readRaw(p []byte) error {
	if _, err := io.ReadFull(h.r, p); err != nil {
		return err
	}
	h.n += int64(len(p))
	return nil
}

func (h *hashReader) uvarint() (uint64, error) { return binary.ReadUvarint(h) }

// bytes reads n bytes in chunks, so a corrupt length runs out of data
// before it allocates much.
func (h *hashReader) bytes(n uint64) ([]byte, error) {
	out := make([]byte, 0, min(n, readChunk))
	for uint64(len(out)) < n {
		c := min(n-uint64(len(out)), readChunk)
		start := len(out)
		out = append(out, make([]byte, c)...)
		if err := h.readFull(out[start:]); err != nil {
			return nil, errors.New("truncated")
		}
	}
	return out, nil
}

// pair reads the lengths and bytes of one pair.
func (h *hashReader) pair() (k, v []byte, err error) {
	kl, err := h.uvarint()
	if err != nil || kl > MaxKey {
		return nil, nil, errors.New("bad key length")
	}
	if k, err = h.bytes(kl); err != nil {
		return nil, nil, err
	}
	vl, err := h.uvarint()
	if err != nil || vl > MaxValue {
		return nil, nil, errors.New("bad value length")
	}
	if v, err = h.bytes(vl); err != nil {
		return nil, nil, err
	}
	return k, v, nil
}

// checkSum reads a block's SHA-256 and compares it with what was read of
// the block.
func (h *hashReader) checkSum(what string) error {
	want := h.sec.Sum(nil)
	h.sec = nil
	got := make([]byte, sumSize)
	if _, err := io.ReadFull(h.r, got); err != nil {
		return corruptf("%s: truncated before its checksum", what)
	}
	h.n += sumSize
	if h.file != nil {
		_, _ = h.file.Write(got)
	}
	if !bytes.Equal(got, want) {
		return corruptf("%s: checksum does not match", what)
	}
	return nil
}
