package chat

import (
	"encoding/binary"

	"github.com/parley-chat/parley/internal/wire"
)

// Operation bytes of the file commands, new at FileProtocol.
const (
	opFileChunk  byte = 'f'
	opFileCommit byte = 'F'
	opFileAbort  byte = 'g'
)

// FileProtocol is the internal protocol (compat.Protocol) that introduced
// files: the commands of this file and the files of a Post. Protocol 2 is
// unreleased, so, like moderation and retention, files gate on it.
const FileProtocol = 2

// flagPostFiles says a full-form Post lists files (after Here).
const flagPostFiles byte = 1 << 2

// FileChunk stores chunk Index of the file ID that User is uploading to
// Room. The first chunk (Index 0) starts the upload; the chunks come in
// order, and a chunk already stored is accepted again without change. The
// room's files, this chunk included, must fit in Quota bytes (the
// proposer's --room-file-quota, carried so every replica decides alike).
//
// Encoding: Tag, 'f', Room, User, ID, uvarint Index, uvarint Quota, Data
// (the rest).
type FileChunk struct {
	Room, User, ID string
	Index, Quota   uint64
	Data           []byte
}

// FileCommit finishes User's upload of file ID to Room: it must hold
// Chunks chunks of Size bytes in all. The file becomes visible to its
// owner, who may attach it to a post, as Name of media type ContentType.
//
// Encoding: Tag, 'F', Room, User, ID, uvarint Size, uvarint Chunks, Name,
// ContentType.
type FileCommit struct {
	Room, User, ID    string
	Size, Chunks      uint64
	Name, ContentType string
}

// FileAbort drops User's unfinished upload of file ID to Room and its
// chunks; a finished or missing file is left alone.
//
// Encoding: Tag, 'g', Room, User, ID.
type FileAbort struct {
	Room, User, ID string
}

func (FileChunk) isCommand()  {}
func (FileCommit) isCommand() {}
func (FileAbort) isCommand()  {}

// fileHead encodes Tag, op, room, user and id.
func fileHead(op byte, room, user, id string, extra int) []byte {
	b := make([]byte, 0, 2+3*binary.MaxVarintLen64+len(room)+len(user)+len(id)+extra)
	b = append(b, Tag, op)
	return wire.AppendString(wire.AppendString(wire.AppendString(b, room), user), id)
}

// EncodeFileChunk returns the binary encoding of c.
func EncodeFileChunk(c FileChunk) []byte {
	b := fileHead(opFileChunk, c.Room, c.User, c.ID, 2*binary.MaxVarintLen64+len(c.Data))
	b = binary.AppendUvarint(binary.AppendUvarint(b, c.Index), c.Quota)
	return append(b, c.Data...)
}

// EncodeFileCommit returns the binary encoding of c.
func EncodeFileCommit(c FileCommit) []byte {
	b := fileHead(opFileCommit, c.Room, c.User, c.ID, 4*binary.MaxVarintLen64+len(c.Name)+len(c.ContentType))
	b = binary.AppendUvarint(binary.AppendUvarint(b, c.Size), c.Chunks)
	return wire.AppendString(wire.AppendString(b, c.Name), c.ContentType)
}

// EncodeFileAbort returns the binary encoding of c.
func EncodeFileAbort(c FileAbort) []byte {
	return fileHead(opFileAbort, c.Room, c.User, c.ID, 0)
}

// decodeFileCommand decodes the commands of this file; ok is false for
// another operation.
func decodeFileCommand(op byte, d *decoder) (c Command, ok bool) {
	switch op {
	case opFileChunk:
		f := FileChunk{Room: d.name(), User: d.name(), ID: d.name(), Index: d.uvarint(), Quota: d.uvarint()}
		if d.err == nil {
			f.Data, d.b = d.b, nil // aliases the command, as decoder.bytes does
		}
		return f, true
	case opFileCommit:
		return FileCommit{Room: d.name(), User: d.name(), ID: d.name(), Size: d.uvarint(), Chunks: d.uvarint(), Name: d.name(), ContentType: d.name()}, true
	case opFileAbort:
		return FileAbort{Room: d.name(), User: d.name(), ID: d.name()}, true
	}
	return nil, false
}
