package chat

import (
	"fmt"
	"slices"

	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/state"
)

// uploadRoom loads a file command's room for user, who must be a member
// allowed to post: the mute and announcement rules of a post apply to
// uploads (slow mode is left to the post that attaches the file).
func uploadRoom(r state.Reader, meta state.Meta, room, user string) (*roomRecord, memberRecord, []byte, error) {
	rec, m, refusal, err := memberRoom(r, room, user, "upload files to it")
	if err != nil || refusal != nil {
		return nil, m, refusal, err
	}
	probe := m
	probe.lastPost = 0
	if ref, err := postRules(r, room, rec, &probe, meta.TimeMs); ref != nil || err != nil {
		return nil, m, ref, err
	}
	return rec, m, nil, nil
}

// checkFileID refuses an id that is not 16 hex digits.
func checkFileID(id string) []byte {
	if !validHookID(id) {
		return refuse(statusInvalid, "file id %q is invalid", clip(id))
	}
	return nil
}

// fileCommand checks a file command's id, loads its room for user
// (uploadRoom) and reads the file (nil: none yet).
func fileCommand(r state.Reader, meta state.Meta, room, user, id string) (memberRecord, *fileRecord, []byte, error) {
	if ref := checkFileID(id); ref != nil {
		return memberRecord{}, nil, ref, nil
	}
	_, m, refusal, err := uploadRoom(r, meta, room, user)
	if err != nil || refusal != nil {
		return m, nil, refusal, err
	}
	f, err := getFile(r, room, id)
	return m, f, nil, err
}

// applyFileChunk stores one chunk of an upload in order, within the
// room's quota.
func applyFileChunk(w state.Writer, meta state.Meta, c FileChunk) ([]byte, error) {
	if len(c.Data) == 0 || len(c.Data) > MaxFileChunk {
		return refuse(statusInvalid, "a file chunk holds 1 to %d bytes, got %d", MaxFileChunk, len(c.Data)), nil
	}
	m, f, refusal, err := fileCommand(w, meta, c.Room, c.User, c.ID)
	switch {
	case err != nil || refusal != nil:
		return refusal, err
	case f == nil && c.Index != 0:
		return refuse(statusNotFound, "upload %s not found: it was not started or was removed unfinished", c.ID), nil
	case f == nil:
		f = &fileRecord{state: fileUploading, owner: m.name}
	case !ident.EqualFold(f.owner, c.User) || f.state != fileUploading:
		return refuse(statusConflict, "file %s is already in use", c.ID), nil
	case c.Index < f.chunks:
		return encodeOK(okResult{op: opFileChunk, user: m.name, n: f.size}), nil // stored already
	case c.Index > f.chunks:
		return refuse(statusInvalid, "chunk %d of file %s comes before chunk %d", c.Index, c.ID, f.chunks), nil
	}
	used, err := fileUsage(w, c.Room)
	if err != nil {
		return nil, err
	}
	if used+uint64(len(c.Data)) > c.Quota {
		return quotaRefusal(c.Room, used, c.Quota), nil
	}
	if err := w.Set(chunkKey(c.Room, c.ID, c.Index), c.Data); err != nil {
		return nil, fmt.Errorf("chat: write chunk: %w", err)
	}
	f.chunks++
	f.size += uint64(len(c.Data))
	f.ts = meta.TimeMs
	if err := setFile(w, c.Room, c.ID, f); err != nil {
		return nil, err
	}
	if err := addUsage(w, c.Room, int64(len(c.Data))); err != nil {
		return nil, err
	}
	return encodeOK(okResult{op: opFileChunk, user: m.name, ts: meta.TimeMs, n: f.size}), nil
}

// applyFileCommit finishes an upload whose chunks all arrived.
func applyFileCommit(w state.Writer, meta state.Meta, c FileCommit) ([]byte, error) {
	if len(c.Name) > MaxFileName || len(c.ContentType) > MaxContentType {
		return refuse(statusInvalid, "file name or media type too long"), nil
	}
	m, f, refusal, err := fileCommand(w, meta, c.Room, c.User, c.ID)
	switch {
	case err != nil || refusal != nil:
		return refusal, err
	case f == nil || !ident.EqualFold(f.owner, c.User):
		return refuse(statusNotFound, "upload %s not found: it was not started or was removed unfinished", c.ID), nil
	case f.state != fileUploading:
		return encodeOK(okResult{op: opFileCommit, user: m.name, ts: f.ts, n: f.size}), nil // finished already
	case f.chunks != c.Chunks || f.size != c.Size:
		return refuse(statusInvalid, "file %s holds %d chunks of %d bytes, not %d of %d", c.ID, f.chunks, f.size, c.Chunks, c.Size), nil
	}
	f.state, f.ts, f.name, f.contentType = fileReady, meta.TimeMs, c.Name, c.ContentType
	if err := setFile(w, c.Room, c.ID, f); err != nil {
		return nil, err
	}
	return encodeOK(okResult{op: opFileCommit, user: m.name, ts: f.ts, n: f.size}), nil
}

// applyFileAbort drops an unfinished upload of its owner.
func applyFileAbort(w state.Writer, c FileAbort) ([]byte, error) {
	if ref := checkFileID(c.ID); ref != nil {
		return ref, nil
	}
	if ref := checkNames(c.Room, c.User); ref != nil {
		return ref, nil
	}
	f, err := getFile(w, c.Room, c.ID)
	if err != nil {
		return nil, err
	}
	var n uint64
	if f != nil && f.state == fileUploading && ident.EqualFold(f.owner, c.User) {
		if n, err = dropFile(w, c.Room, c.ID, f); err != nil {
			return nil, err
		}
	}
	return encodeOK(okResult{op: opFileAbort, user: c.User, n: n}), nil
}

// postFiles loads the files a post attaches: each a finished file of the
// sender in the room, not attached yet, named once.
func postFiles(r state.Reader, room, sender string, ids []string) ([]fileRef, []*fileRecord, []byte, error) {
	if len(ids) > MaxPostFiles {
		return nil, nil, refuse(statusInvalid, "files: a message carries at most %d files", MaxPostFiles), nil
	}
	refs := make([]fileRef, 0, len(ids))
	recs := make([]*fileRecord, 0, len(ids))
	for i, id := range ids {
		if ref := checkFileID(id); ref != nil {
			return nil, nil, ref, nil
		}
		if slices.Contains(ids[:i], id) {
			return nil, nil, refuse(statusInvalid, "files: %s is listed twice", id), nil
		}
		f, err := getFile(r, room, id)
		switch {
		case err != nil:
			return nil, nil, nil, err
		case f == nil || f.state == fileUploading || !ident.EqualFold(f.owner, sender):
			return nil, nil, refuse(statusInvalid, "files: %s is no finished upload of yours in room %q", HookKey(room, id), room), nil
		case f.state == fileAttached:
			return nil, nil, refuse(statusConflict, "files: %s is attached to message %d already", HookKey(room, id), f.seq), nil
		}
		refs = append(refs, fileRef{id: id, name: f.name, contentType: f.contentType, size: f.size})
		recs = append(recs, f)
	}
	return refs, recs, nil, nil
}

// attachFiles marks the files of message seq (posted at ts) attached.
func attachFiles(w state.Writer, room string, seq uint64, ts int64, refs []fileRef, recs []*fileRecord) error {
	for i, f := range recs {
		f.state, f.seq, f.ts = fileAttached, seq, ts
		if err := setFile(w, room, refs[i].id, f); err != nil {
			return err
		}
	}
	return nil
}

// removeFiles drops the files a message carries, bytes and records: the
// message is deleted.
func removeFiles(w state.Writer, room string, msg *eventRecord) error {
	for _, ref := range msg.files {
		f, err := getFile(w, room, ref.id)
		if err != nil {
			return err
		}
		if f != nil {
			if _, err := dropFile(w, room, ref.id, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// fileExpired reports whether Compact at now removes file f of room rec:
// the room is deleted or was created again after it, its upload was left
// unfinished for FileOrphanMs, it was never attached within
// FileUnattachedMs, or retention removed its message.
func fileExpired(rec *roomRecord, f *fileRecord, now int64) bool {
	switch {
	case rec.deleted || f.ts < rec.createdAt:
		return true
	case f.state == fileUploading:
		return now-f.ts > FileOrphanMs
	case f.state == fileReady:
		return now-f.ts > FileUnattachedMs
	}
	return f.seq < rec.firstRetained
}

// files removes room's expired files (fileExpired), one budget unit per
// key deleted.
func (cp *compaction) files(room string, rec *roomRecord) error {
	type expired struct {
		id string
		f  *fileRecord
	}
	var drop []expired
	var err error
	lo := filesPrefix(room)
	scanErr := cp.w.Scan(lo, state.PrefixEnd(lo), func(k, v []byte) bool {
		var f *fileRecord
		if f, err = decodeFile(k, v); err != nil {
			return false
		}
		if fileExpired(rec, f, cp.now) {
			drop = append(drop, expired{string(k[len(lo):]), f})
		}
		return true
	})
	if scanErr != nil {
		return fmt.Errorf("chat: scan files of %q: %w", room, scanErr)
	}
	if err != nil {
		return err
	}
	for _, e := range drop {
		if cp.used >= cp.budget {
			cp.more = true
			return nil
		}
		n, err := dropFile(cp.w, room, e.id, e.f)
		if err != nil {
			return err
		}
		cp.used += n
		cp.deleted += n
	}
	return nil
}
