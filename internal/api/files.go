package api

import (
	"context"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ratelimit"
)

// FileService is what the file routes need from chat.
type FileService interface {
	Upload(ctx context.Context, user, room string, req chat.UploadRequest, idempotencyKey string) (chat.FileInfo, error)
	Download(ctx context.Context, user, id string) (chat.FileInfo, func(w io.Writer) error, error)
	PostFiles(ctx context.Context, user, room, text string, to []string, replyTo uint64, files []string, idempotencyKey string) (chat.PostResult, error)
}

var _ FileService = (*chat.Service)(nil)

// fileCSP is the Content-Security-Policy of every downloaded file: it may
// load nothing and run nothing, even when a browser opens it as a page.
const fileCSP = "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox"

// fileRoutes registers the file routes: uploading to a room (write scope)
// and downloading by id (read scope).
func (s *Server) fileRoutes() {
	s.handleAuth("POST /api/v1/rooms/{room}/files", s.fileUpload)
	s.handleAuth("GET /api/v1/files/{id}", s.fileDownload)
}

// fileUpload serves POST /api/v1/rooms/{room}/files?name=NAME: the body is
// the file's bytes, Content-Type its media type. 201 with the file; 413
// past --max-file-size, checked against Content-Length before reading and
// while reading a body of unknown length; 409 when the room's quota is
// full. The Idempotency-Key header makes a retry store the file once.
func (s *Server) fileUpload(w http.ResponseWriter, r *http.Request) {
	idem, err := idempotencyKey(r, "")
	if err == nil {
		err = s.take(r, ratelimit.Posts)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	body := &chunkDeadlines{rc: http.NewResponseController(w), r: r.Body}
	req := chat.UploadRequest{Name: r.URL.Query().Get("name"), ContentType: r.Header.Get("Content-Type"), Size: r.ContentLength, Body: body}
	f, err := s.files.Upload(r.Context(), identity(r).User, r.PathValue("room"), req, idem)
	if err != nil {
		if errs.Is(err, errs.TooLarge) {
			// The rest of the body is not read: close the connection
			// rather than drain an unbounded upload.
			w.Header().Set("Connection", "close")
		}
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, f)
}

// fileDownload serves GET /api/v1/files/{id}: the file's bytes, streamed
// chunk by chunk, to a member of its room who may see its message. Images
// of chat.InlineImageTypes are served inline, every other type (SVG and
// HTML included) as an attachment; nosniff and a CSP that allows nothing
// keep a browser from running what it receives.
func (s *Server) fileDownload(w http.ResponseWriter, r *http.Request) {
	f, write, err := s.files.Download(r.Context(), identity(r).User, r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	h := w.Header()
	disposition := "attachment"
	if chat.IsInlineImage(f.ContentType) {
		disposition = "inline"
	}
	h.Set("Content-Type", f.ContentType)
	h.Set("Content-Length", strconv.FormatInt(f.Size, 10))
	if named := mime.FormatMediaType(disposition, map[string]string{"filename": f.Name}); named != "" {
		disposition = named
	}
	h.Set("Content-Disposition", disposition)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", fileCSP)
	h.Set("Cache-Control", "private, max-age=300")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	if err := write(&chunkDeadlines{rc: http.NewResponseController(w), w: w}); err != nil {
		// The status is sent: cut the response short so the client sees
		// fewer bytes than Content-Length, and log why.
		s.log.Warn("file download cut short", "file", f.ID, "err", err)
		panic(http.ErrAbortHandler)
	}
}

// fileRoom returns the room of the file a request names ({id} of GET
// /api/v1/files/{id}), so that a token scoped to rooms reads the files
// of those rooms only.
func fileRoom(r *http.Request) (string, bool) {
	if !strings.HasPrefix(r.Pattern, "GET /api/v1/files/") {
		return "", false
	}
	room, _, err := chat.ParseFileID(r.PathValue("id"))
	return room, err == nil
}

// fileChunkWindow is how long the reading or writing of one chunk of a
// file may take: the deadline moves on with every chunk, so a large file on
// a slow link is not cut by the server's read and write timeouts while a
// stalled client still is.
const fileChunkWindow = 30 * time.Second

// chunkDeadlines moves the connection's deadlines on before each read of r
// (both: the answer follows the body), or its write deadline before each
// write to w.
type chunkDeadlines struct {
	rc *http.ResponseController
	r  io.Reader
	w  io.Writer
}

// Read implements io.Reader.
func (c *chunkDeadlines) Read(p []byte) (int, error) {
	end := time.Now().Add(fileChunkWindow)
	_ = c.rc.SetReadDeadline(end) // not every writer has deadlines
	_ = c.rc.SetWriteDeadline(end)
	return c.r.Read(p)
}

// Write implements io.Writer.
func (c *chunkDeadlines) Write(p []byte) (int, error) {
	_ = c.rc.SetWriteDeadline(time.Now().Add(fileChunkWindow))
	return c.w.Write(p)
}
