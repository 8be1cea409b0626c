package backup

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash"
	"io"
)

// SectionWriter encodes one group's section: the group and its applied
// index, then pairs, then the end record and the section's SHA-256. A node
// writes one for `GET /api/v1/cluster/backup/{group}`; Writer.CopySection
// checks and copies it into a file.
type SectionWriter struct {
	w    *bufio.Writer
	sum  hash.Hash
	info SectionInfo
	buf  [1 + 2*binary.MaxVarintLen64]byte
	err  error
}

// NewSectionWriter starts the section of group at applied on w. It writes
// nothing until the first Pair or Finish.
func NewSectionWriter(w io.Writer, group, applied uint64) *SectionWriter {
	s := &SectionWriter{w: bufio.NewWriterSize(w, 256<<10), sum: sha256.New(), info: SectionInfo{Group: group, Applied: applied}}
	b := append(s.buf[:0], blockSection)
	b = binary.AppendUvarint(b, group)
	b = binary.AppendUvarint(b, applied)
	s.write(b)
	return s
}

// write adds b to the section and its checksum; the first error sticks.
func (s *SectionWriter) write(b []byte) {
	if s.err != nil {
		return
	}
	_, _ = s.sum.Write(b)
	if _, err := s.w.Write(b); err != nil {
		s.err = fmt.Errorf("write backup section of group %d: %w", s.info.Group, err)
	}
}

// Pair adds one key/value pair. Pairs must come in key order.
func (s *SectionWriter) Pair(k, v []byte) error {
	if len(k) > MaxKey || len(v) > MaxValue {
		return fmt.Errorf("backup: group %d: pair of %d+%d bytes is over the limits", s.info.Group, len(k), len(v))
	}
	b := append(s.buf[:0], recordPair)
	s.write(binary.AppendUvarint(b, uint64(len(k))))
	s.write(k)
	s.write(binary.AppendUvarint(s.buf[:0], uint64(len(v))))
	s.write(v)
	s.info.Keys++
	s.info.Bytes += uint64(len(k) + len(v))
	return s.err
}

// Finish writes the end record and the checksum and flushes.
func (s *SectionWriter) Finish() (SectionInfo, error) {
	b := append(s.buf[:0], recordEnd)
	s.write(binary.AppendUvarint(b, s.info.Keys))
	if s.err == nil {
		if _, err := s.w.Write(s.sum.Sum(nil)); err != nil {
			s.err = err
		} else if err := s.w.Flush(); err != nil {
			s.err = err
		}
	}
	return s.info, s.err
}

// Writer writes a backup file: the header block, sections copied from
// nodes' streams (CopySection), and the trailer (Close).
type Writer struct {
	out  *bufio.Writer
	file hash.Hash // every byte written so far
	n    int64
	h    Header
	next uint64 // the group the next section must be of
	err  error
}

// NewWriter writes the magic and the header block to w.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	h.FormatVersion = FormatVersion
	if err := h.validate(); err != nil {
		return nil, err
	}
	body, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	fw := &Writer{out: bufio.NewWriterSize(w, 256<<10), file: sha256.New(), h: h}
	fw.Write([]byte(Magic))
	blk := binary.AppendUvarint([]byte{blockHeader}, uint64(len(body)))
	blk = append(blk, body...)
	sum := sha256.Sum256(blk)
	fw.Write(blk)
	fw.Write(sum[:])
	return fw, fw.err
}

// Write implements io.Writer: it adds p to the file and its checksum.
// Errors stick.
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	_, _ = w.file.Write(p)
	n, err := w.out.Write(p)
	w.n += int64(n)
	if err != nil {
		w.err = fmt.Errorf("write backup: %w", err)
	}
	return n, w.err
}

// Next returns the group whose section CopySection expects next (sections
// go 0, 1, ..., P), and false once every section was copied.
func (w *Writer) Next() (uint64, bool) { return w.next, w.next <= uint64(w.h.Partitions) }

// CopySection reads one section as SectionWriter encodes it from r, which
// must hold that section and nothing else, checks it (its group is the one
// Next names, its records and checksum are whole) and copies it into the
// file. A section that fails the check leaves the file unusable: write it
// elsewhere first and discard it on error.
func (w *Writer) CopySection(r io.Reader) (SectionInfo, error) {
	group, ok := w.Next()
	if !ok {
		return SectionInfo{}, fmt.Errorf("backup: every section was written")
	}
	if w.err != nil {
		return SectionInfo{}, w.err
	}
	info, err := CheckSection(io.TeeReader(r, w))
	if err == nil && info.Group != group {
		err = corruptf("section of group %d where group %d was expected", info.Group, group)
	}
	if w.err != nil {
		return info, w.err
	}
	if err != nil {
		w.err = err
		return info, err
	}
	w.next++
	return info, nil
}

// Close writes the trailer — the number of sections and the SHA-256 of the
// whole file before it — and flushes. It refuses a file missing sections.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	if g, ok := w.Next(); ok {
		return fmt.Errorf("backup: section of group %d not written", g)
	}
	w.Write(binary.AppendUvarint([]byte{blockEnd}, w.next))
	if w.err != nil {
		return w.err
	}
	if _, err := w.out.Write(w.file.Sum(nil)); err != nil {
		return fmt.Errorf("write backup: %w", err)
	}
	if err := w.out.Flush(); err != nil {
		return fmt.Errorf("write backup: %w", err)
	}
	return nil
}

// CheckSection reads one section as SectionWriter encodes it from r, which
// must hold that section and nothing else, and checks its records and
// checksum.
func CheckSection(r io.Reader) (SectionInfo, error) {
	hr := newHashReader(r)
	info, err := readSection(hr, nil)
	if err != nil {
		return info, err
	}
	if _, err := hr.r.ReadByte(); err != io.EOF {
		return info, corruptf("group %d: bytes after the section", info.Group)
	}
	return info, nil
}
