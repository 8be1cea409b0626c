package chat

import (
	"encoding/binary"
	"fmt"
	"mime"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/text"
	"github.com/parley-chat/parley/internal/wire"
)

// Bounds and defaults of files (see DESIGN.md, "Files").
const (
	// MaxFileChunk is the most bytes of a file one FileChunk command carries:
	// with its header a command stays far below the 1 MiB Raft entry limit.
	MaxFileChunk = 512 << 10
	// DefaultMaxFileSize is the largest file a node accepts by default
	// (--max-file-size).
	DefaultMaxFileSize = 10 << 20
	// DefaultRoomFileQuota is the most bytes of files one room stores by
	// default (--room-file-quota), uploads in progress included.
	DefaultRoomFileQuota = 1 << 30
	// MaxFileName is the longest file name in bytes.
	MaxFileName = 255
	// MaxContentType is the longest media type in bytes.
	MaxContentType = 127
	// MaxPostFiles is the most files one message carries.
	MaxPostFiles = 10
	// FileOrphanMs is how long an upload that was never finished keeps its
	// chunks after its last one: Compact removes it then.
	FileOrphanMs = 60 * 60 * 1000
	// FileUnattachedMs is how long a finished upload that no message
	// carries is kept: Compact removes it then.
	FileUnattachedMs = 24 * 60 * 60 * 1000
)

// File states, the first byte of a file record.
const (
	fileUploading byte = 'u' // chunks arriving, invisible
	fileReady     byte = 'c' // finished, not yet attached to a message
	fileAttached  byte = 'a' // carried by message seq
)

// FileInfo describes a file as messages, uploads and downloads show it.
type FileInfo struct {
	// ID names the file: "<room>.<16 hex digits>", the last segment of
	// its URL /api/v1/files/<id>.
	ID          string `json:"id"`
	Name        string `json:"name"`
	Size        int64  `json:"size"`
	ContentType string `json:"content_type"`
	// URL is the file's path on every node: /api/v1/files/<id>.
	URL string `json:"url"`
}

// FileURL returns the API path of file id.
func FileURL(id string) string { return "/api/v1/files/" + id }

// fileRef is a file as a message record keeps it: its id in the room and
// what readers are shown.
type fileRef struct {
	id, name, contentType string
	size                  uint64
}

// info returns the public form of f, a file of room.
func (f fileRef) info(room string) FileInfo {
	id := HookKey(room, f.id) // files share the form of hook names
	return FileInfo{ID: id, Name: f.name, Size: int64(f.size), ContentType: f.contentType, URL: FileURL(id)}
}

// fileRecord is a file's stored state, under c/<room>/f/<id>.
type fileRecord struct {
	state byte
	// ts is the time of the latest chunk (uploading), of the commit
	// (ready) or of the message (attached): what Compact ages it by.
	ts     int64
	owner  string
	size   uint64 // bytes stored so far
	chunks uint64 // chunks stored so far
	seq    uint64 // the message carrying it (attached)
	// name and contentType are set by the commit.
	name, contentType string
}

// filesPrefix returns the prefix of room's file records: c/<room>/f/.
func filesPrefix(room string) []byte { return append(roomKeyBuf(room, 2+hookIDLen), 'f', '/') }

// fileKey returns the key of room's file record id.
func fileKey(room, id string) []byte { return append(filesPrefix(room), id...) }

// chunkKey returns the key of chunk i of room's file id:
// c/<room>/F/<id><i>, i 4 bytes big endian.
func chunkKey(room, id string, i uint64) []byte {
	b := append(append(roomKeyBuf(room, 6+hookIDLen), 'F', '/'), id...)
	return binary.BigEndian.AppendUint32(b, uint32(i))
}

// usageKey returns the key of the bytes of files room stores: c/<room>/q.
func usageKey(room string) []byte { return append(roomKeyBuf(room, 1), 'q') }

// encodeFile returns the stored form of f: state, varint ts, owner,
// uvarint size, chunks, seq, name, content type.
func encodeFile(f *fileRecord) []byte {
	b := make([]byte, 0, 8+4*binary.MaxVarintLen64+len(f.owner)+len(f.name)+len(f.contentType))
	b = binary.AppendVarint(append(b, f.state), f.ts)
	b = wire.AppendString(b, f.owner)
	b = binary.AppendUvarint(binary.AppendUvarint(binary.AppendUvarint(b, f.size), f.chunks), f.seq)
	return wire.AppendString(wire.AppendString(b, f.name), f.contentType)
}

// decodeFile decodes the file record stored under k.
func decodeFile(k, v []byte) (*fileRecord, error) {
	d := decoder{b: v}
	f := &fileRecord{state: d.byte1(), ts: d.varint(), owner: d.name(), size: d.uvarint(), chunks: d.uvarint(), seq: d.uvarint(), name: d.str(), contentType: d.str()}
	if d.err == nil && f.state != fileUploading && f.state != fileReady && f.state != fileAttached {
		d.fail("unknown file state %#x", f.state)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return nil, fmt.Errorf("chat: corrupt file record under %q: %w", k, d.err)
	}
	return f, nil
}

// getFile reads room's file id; nil when there is none.
func getFile(r state.Reader, room, id string) (*fileRecord, error) {
	k := fileKey(room, id)
	v, found, err := r.Get(k)
	if err != nil {
		return nil, fmt.Errorf("chat: read %q: %w", k, err)
	}
	if !found {
		return nil, nil
	}
	return decodeFile(k, v)
}

func setFile(w state.Writer, room, id string, f *fileRecord) error {
	if err := w.Set(fileKey(room, id), encodeFile(f)); err != nil {
		return fmt.Errorf("chat: write file %q of %q: %w", id, room, err)
	}
	return nil
}

// fileUsage returns the bytes of files room stores.
func fileUsage(r state.Reader, room string) (uint64, error) {
	k := usageKey(room)
	v, found, err := r.Get(k)
	if err != nil || !found {
		return 0, err
	}
	d := decoder{b: v}
	n := d.uvarint()
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return 0, fmt.Errorf("chat: corrupt file usage under %q: %w", k, d.err)
	}
	return n, nil
}

// addUsage adds delta (negative: removes) to the bytes of files room
// stores; the key is gone when it reaches 0.
func addUsage(w state.Writer, room string, delta int64) error {
	n, err := fileUsage(w, room)
	if err != nil {
		return err
	}
	n = uint64(max(int64(n)+delta, 0))
	if n == 0 {
		return deleteKey(w, usageKey(room))
	}
	if err := w.Set(usageKey(room), binary.AppendUvarint(nil, n)); err != nil {
		return fmt.Errorf("chat: write file usage of %q: %w", room, err)
	}
	return nil
}

// dropFile removes room's file id, its record and chunks, from the store
// and from the room's usage; it returns the number of keys deleted.
func dropFile(w state.Writer, room, id string, f *fileRecord) (uint64, error) {
	for i := range f.chunks {
		if err := deleteKey(w, chunkKey(room, id, i)); err != nil {
			return 0, err
		}
	}
	if err := deleteKey(w, fileKey(room, id)); err != nil {
		return 0, err
	}
	return f.chunks + 1, addUsage(w, room, -int64(f.size))
}

// ParseFileID splits a public file id into its room and its id in the
// room; errs.Invalid when it is not of the form "<room>.<16 hex digits>".
func ParseFileID(s string) (room, id string, err error) {
	room, id, ok := parseHookKey(s)
	if !ok {
		return "", "", errs.New(errs.Invalid, "file id %q is invalid: it is <room>.<16 hexadecimal digits>, as the upload answered", clip(s))
	}
	return room, id, nil
}

// CheckFileName checks a file's name: 1 to MaxFileName bytes of one line
// of text (internal/text: no control character, no bidirectional
// override), not blank, without a path separator, and neither "." nor "..".
func CheckFileName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return errs.New(errs.Invalid, "name: a file name is required (the name query parameter)")
	case len(name) > MaxFileName:
		return errs.New(errs.Invalid, "name: a file name is at most %d bytes, got %d", MaxFileName, len(name))
	case !utf8.ValidString(name):
		return errs.New(errs.Invalid, "name: the file name is not valid UTF-8")
	case strings.ContainsAny(name, `/\`):
		return errs.New(errs.Invalid, "name: a file name must not contain a path separator (/ or \\)")
	case name == "." || name == "..":
		return errs.New(errs.Invalid, "name: %q is not a file name", name)
	}
	if err := text.Check(name, text.Line); err != nil {
		return errs.New(errs.Invalid, "name: %v", err)
	}
	return nil
}

// CanonicalContentType checks a Content-Type header and returns its media
// type in lower case without parameters ("image/png"): a type/subtype of
// at most MaxContentType bytes. Missing or malformed is errs.Invalid naming
// Content-Type.
func CanonicalContentType(header string) (string, error) {
	if strings.TrimSpace(header) == "" {
		return "", errs.New(errs.Invalid, "Content-Type: the header is required: the file's media type, such as image/png")
	}
	mt, _, err := mime.ParseMediaType(header)
	if err != nil || !strings.Contains(mt, "/") {
		return "", errs.New(errs.Invalid, "Content-Type: %q is not a media type such as image/png", clip(header))
	}
	if len(mt) > MaxContentType {
		return "", errs.New(errs.Invalid, "Content-Type: a media type is at most %d bytes", MaxContentType)
	}
	if mt == "multipart/form-data" {
		return "", errs.New(errs.Invalid, "Content-Type: send the file's bytes as the body with its own media type, not a multipart form")
	}
	return mt, nil
}

// InlineImageTypes are the media types served inline and shown as images
// by the web app; every other type, SVG included (it may carry script),
// is served as an attachment.
var InlineImageTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// IsInlineImage reports whether files of media type ct are shown inline.
func IsInlineImage(ct string) bool { return slices.Contains(InlineImageTypes, ct) }

// appendFileRefs appends uvarint len(files) and each file: id, name,
// content type, uvarint size.
func appendFileRefs(b []byte, files []fileRef) []byte {
	b = binary.AppendUvarint(b, uint64(len(files)))
	for _, f := range files {
		b = wire.AppendString(wire.AppendString(wire.AppendString(b, f.id), f.name), f.contentType)
		b = binary.AppendUvarint(b, f.size)
	}
	return b
}

// fileRefs reads what appendFileRefs wrote: at least one file.
func (d *decoder) fileRefs() []fileRef {
	n := d.uvarint()
	if d.err == nil && (n == 0 || n > uint64(len(d.b))/7) { // each file takes at least 7 bytes
		d.fail("%d files in %d bytes", n, len(d.b))
	}
	var out []fileRef
	for i := uint64(0); d.err == nil && i < n; i++ {
		out = append(out, fileRef{id: d.name(), name: d.name(), contentType: d.name(), size: d.uvarint()})
	}
	return out
}
