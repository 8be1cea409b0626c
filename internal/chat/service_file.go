package chat

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/parley-chat/parley/internal/compat"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/wire"
)

// UploadRequest is a file to upload to a room.
type UploadRequest struct {
	// Name is the file's name (CheckFileName).
	Name string
	// ContentType is the Content-Type header (CanonicalContentType).
	ContentType string
	// Size is the body's length when the request announced it
	// (Content-Length), -1 otherwise.
	Size int64
	// Body is read to its end, or until it exceeds Config.MaxFileSize.
	Body io.Reader
}

// Upload stores a file in room for user, who must be a member allowed to
// post (errs.Forbidden otherwise), and returns it. The body is read and
// replicated MaxFileChunk bytes at a time, so neither this node nor any
// Raft entry ever holds more; the file becomes visible (to its owner, who
// attaches it to a post) only once every chunk is stored. A body larger
// than Config.MaxFileSize is errs.TooLarge and a room whose files would
// exceed Config.RoomFileQuota errs.Conflict, both naming the limit and
// leaving nothing stored. A retry with the same idempotency key stores the
// file once and returns the first answer. An upload cut short leaves
// chunks no one sees; Compact removes them after FileOrphanMs.
func (s *Service) Upload(ctx context.Context, user, room string, req UploadRequest, idempotencyKey string) (FileInfo, error) {
	room, dk, err := s.prepare(user, room, idempotencyKey)
	if err != nil {
		return FileInfo{}, err
	}
	if err := compat.Require(s.cfg.ClusterProtocol, FileProtocol, "files"); err != nil {
		return FileInfo{}, err
	}
	ct, err := CanonicalContentType(req.ContentType)
	if err == nil {
		err = CheckFileName(req.Name)
	}
	if err == nil && req.Size > s.cfg.MaxFileSize {
		err = s.tooLarge(req.Size)
	}
	if err != nil {
		return FileInfo{}, err
	}
	if err := s.checkUpload(ctx, user, room, req.Size); err != nil {
		return FileInfo{}, fmt.Errorf("chat: upload to %q: %w", room, err)
	}
	id, err := newFileID(dk)
	if err != nil {
		return FileInfo{}, err
	}
	up := upload{s: s, user: user, room: room, id: id, idem: idempotencyKey}
	if err := up.send(ctx, req.Body); err != nil {
		up.abort(ctx, err)
		return FileInfo{}, fmt.Errorf("chat: upload to %q: %w", room, err)
	}
	cmd := FileCommit{Room: room, User: user, ID: id, Size: up.size, Chunks: up.chunks, Name: req.Name, ContentType: ct}
	if _, err := s.propose(ctx, room, dk, EncodeFileCommit(cmd)); err != nil {
		up.abort(ctx, err)
		return FileInfo{}, fmt.Errorf("chat: upload to %q: %w", room, err)
	}
	return fileRef{id: id, name: req.Name, contentType: ct, size: up.size}.info(room), nil
}

// tooLarge is the refusal of a file of size bytes (-1: more than allowed).
func (s *Service) tooLarge(size int64) error {
	if size < 0 {
		return errs.New(errs.TooLarge, "the file is larger than the limit of %d bytes (--max-file-size)", s.cfg.MaxFileSize)
	}
	return errs.New(errs.TooLarge, "the file is %d bytes; the limit is %d bytes (--max-file-size)", size, s.cfg.MaxFileSize)
}

// checkUpload refuses an upload before its body is read when user may not
// upload to room, or the room's quota has no room for size bytes (-1:
// unknown), as Apply would.
func (s *Service) checkUpload(ctx context.Context, user, room string, size int64) error {
	var refusal []byte
	_, err := s.r.Read(ctx, s.r.PartitionOf(room), false, func(r state.Reader) error {
		var err error
		if _, _, refusal, err = uploadRoom(r, state.Meta{TimeMs: time.Now().UnixMilli()}, room, user); err != nil || refusal != nil {
			return err
		}
		used, err := fileUsage(r, room)
		if err == nil && size > 0 && used+uint64(size) > uint64(s.cfg.RoomFileQuota) {
			refusal = quotaRefusal(room, used, uint64(s.cfg.RoomFileQuota))
		}
		return err
	})
	if err == nil && refusal != nil {
		_, err = DecodeResult(refusal)
	}
	return err
}

// quotaRefusal refuses a file that does not fit in room's quota.
func quotaRefusal(room string, used, quota uint64) []byte {
	return refuse(statusConflict, "room %q's file quota is full: its files use %d of its %d bytes (--room-file-quota)", room, used, quota)
}

// newFileID returns the id of a new file: derived from the upload's dedup
// key when it has one, so that a retry names the same file, else random.
func newFileID(dk string) (string, error) {
	var raw [8]byte
	if dk != "" {
		sum := sha256.Sum256([]byte(dk))
		copy(raw[:], sum[:])
	} else if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("chat: random file id: %w", err)
	}
	return hex.EncodeToString(raw[:]), nil
}

// upload is one file upload at work: the chunks proposed so far.
type upload struct {
	s               *Service
	user, room, id  string
	idem            string
	size, chunks    uint64
	refusedTooLarge bool
}

// send reads body and proposes it chunk by chunk.
func (u *upload) send(ctx context.Context, body io.Reader) error {
	limit := uint64(u.s.cfg.MaxFileSize)
	buf := make([]byte, MaxFileChunk)
	p := u.s.r.PartitionOf(u.room)
	for {
		n, rerr := io.ReadFull(body, buf)
		if n > 0 {
			if u.size+uint64(n) > limit {
				u.refusedTooLarge = true
				return u.s.tooLarge(-1)
			}
			dk := wire.NewDedupKey(u.idem, Tag, opFileChunk).String(ident.Fold(u.user)).Uvarint(u.chunks).Raw(u.idem).Done()
			cmd := FileChunk{Room: u.room, User: u.user, ID: u.id, Index: u.chunks, Quota: uint64(u.s.cfg.RoomFileQuota), Data: buf[:n]}
			if _, err := u.s.proposeTo(ctx, p, dk, EncodeFileChunk(cmd)); err != nil {
				return err
			}
			u.size += uint64(n)
			u.chunks++
		}
		switch {
		case errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF):
			if u.size == 0 {
				return errs.New(errs.Invalid, "the file is empty")
			}
			return nil
		case rerr != nil:
			return errs.New(errs.Invalid, "the upload ended early: %v", rerr)
		}
	}
}

// abort drops the chunks an upload that failed with cause stored, at
// once, unless a retry with the same idempotency key may still finish it
// (the cause is not the caller's): Compact removes those after
// FileOrphanMs.
func (u *upload) abort(ctx context.Context, cause error) {
	if u.chunks == 0 {
		return
	}
	if u.idem != "" && !u.refusedTooLarge && !errs.Is(cause, errs.Conflict) && !errs.Is(cause, errs.Invalid) {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	// Best effort: what fails here, Compact removes later.
	_, _ = u.s.propose(ctx, u.room, "", EncodeFileAbort(FileAbort{Room: u.room, User: u.user, ID: u.id}))
}

// Download returns file id (as Upload answered it) and a function that
// writes its bytes to w, one chunk per read, for user: a member of its
// room who may see the message carrying it (its owner, before it is
// attached). A missing file, or one user may not see, is errs.NotFound; a
// user who is not a member errs.Forbidden. A file deleted while it is
// written ends write with errs.NotFound.
func (s *Service) Download(ctx context.Context, user, id string) (FileInfo, func(w io.Writer) error, error) {
	if err := checkUser(user); err != nil {
		return FileInfo{}, nil, err
	}
	room, fid, err := ParseFileID(id)
	if err != nil {
		return FileInfo{}, nil, err
	}
	p := s.r.PartitionOf(room)
	var f *fileRecord
	if _, err := s.r.Read(ctx, p, false, func(r state.Reader) (err error) {
		f, err = readableFile(r, room, fid, user)
		return err
	}); err != nil {
		return FileInfo{}, nil, fmt.Errorf("chat: file %s: %w", id, err)
	}
	info := fileRef{id: fid, name: f.name, contentType: f.contentType, size: f.size}.info(room)
	write := func(w io.Writer) error {
		for i := range f.chunks {
			var chunk []byte
			if _, err := s.r.Read(ctx, p, false, func(r state.Reader) error {
				v, found, err := r.Get(chunkKey(room, fid, i))
				if err == nil && !found {
					err = errs.New(errs.NotFound, "file %s was deleted", id)
				}
				chunk = v
				return err
			}); err != nil {
				return fmt.Errorf("chat: file %s: %w", id, err)
			}
			if _, err := w.Write(chunk); err != nil {
				return err
			}
		}
		return nil
	}
	return info, write, nil
}

// readableFile returns room's finished file id if user may read it: a
// member who may see the message carrying it, or its owner before it is
// attached.
func readableFile(r state.Reader, room, id, user string) (*fileRecord, error) {
	rec, err := checkRead(r, room, user)
	if err != nil {
		return nil, err
	}
	if _, member, err := getMember(r, room, user); err != nil || !member {
		if err == nil {
			err = errs.New(errs.Forbidden, "join room %q to download its files", room)
		}
		return nil, err
	}
	missing := errs.New(errs.NotFound, "file %s not found", HookKey(room, id))
	f, err := getFile(r, room, id)
	switch {
	case err != nil:
		return nil, err
	case f == nil || f.state == fileUploading:
		return nil, missing
	case f.state == fileReady:
		if !ident.EqualFold(f.owner, user) {
			return nil, missing
		}
		return f, nil
	}
	msg, ref, err := loadMessage(r, room, rec, f.seq, user, false)
	if err != nil {
		return nil, err
	}
	if ref != nil || msg.flags&msgDeleted != 0 {
		return nil, missing
	}
	return f, nil
}

// PostFiles is PostReply (replyTo 0: a plain post) carrying files: the
// ids Upload answered, of files user uploaded to room and has not attached
// yet (errs.Invalid naming files otherwise). With files the text may be
// empty.
func (s *Service) PostFiles(ctx context.Context, user, room, text string, to []string, replyTo uint64, files []string, idempotencyKey string) (PostResult, error) {
	return s.post(ctx, user, room, text, to, replyTo, files, idempotencyKey)
}

// postFileIDs returns the ids in room of the public file ids of a post.
func (s *Service) postFileIDs(room string, files []string) ([]string, error) {
	if len(files) == 0 {
		return nil, nil
	}
	if err := compat.Require(s.cfg.ClusterProtocol, FileProtocol, "files"); err != nil {
		return nil, err
	}
	if len(files) > MaxPostFiles {
		return nil, errs.New(errs.Invalid, "files: a message carries at most %d files, got %d", MaxPostFiles, len(files))
	}
	ids := make([]string, len(files))
	for i, f := range files {
		r, id, err := ParseFileID(f)
		if err != nil {
			return nil, errs.New(errs.Invalid, "files: %v", err)
		}
		if r != room {
			return nil, errs.New(errs.Invalid, "files: %s was uploaded to room %q, not %q", clip(f), r, room)
		}
		ids[i] = id
	}
	return ids, nil
}
