package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
)

// ExportService is what GET /api/v1/rooms/{room}/export needs from chat.
type ExportService interface {
	Export(ctx context.Context, user, room string, isAdmin bool, emit func([]chat.Event) error) error
}

var _ ExportService = (*chat.Service)(nil)

// exportWriteWindow is how long the writing of one page of an export may
// take: the deadline moves on with every page, so a long export is not cut
// by the server's write timeout while a stalled client still is.
const exportWriteWindow = time.Minute

// exportErrorLine is the last line of an export that failed after it began:
// the answer's status was sent with the first line, so the failure is told
// in the body, in the Error schema's form.
type exportErrorLine struct {
	Error errorJSON `json:"error"`
}

// roomExport serves GET /api/v1/rooms/{room}/export: the room's history as
// JSON Lines (application/x-ndjson), one event per line in seq order,
// streamed page by page (chat.Service.Export); for the room's owner or an
// admin. A failure once lines were sent ends the body with one line
// {"error":{...}} instead of an event; a complete export ends with the last
// event it was asked for.
func (s *Server) roomExport(w http.ResponseWriter, r *http.Request) {
	id := identity(r)
	rc := http.NewResponseController(w)
	var bw *bufio.Writer
	var enc *json.Encoder
	err := s.export.Export(r.Context(), id.User, r.PathValue("room"), id.Admin, func(evs []chat.Event) error {
		if bw == nil {
			h := w.Header()
			h.Set("Content-Type", "application/x-ndjson")
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Cache-Control", "no-store")
			room, _ := chat.CanonicalRoom(r.PathValue("room")) // valid: the export began
			h.Set("Content-Disposition", `attachment; filename="`+room+`.jsonl"`)
			w.WriteHeader(http.StatusOK)
			bw = bufio.NewWriterSize(w, 32<<10)
			enc = json.NewEncoder(bw)
		}
		_ = rc.SetWriteDeadline(time.Now().Add(exportWriteWindow)) // not every writer has deadlines
		for i := range evs {
			if err := enc.Encode(&evs[i]); err != nil {
				return err
			}
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		_ = rc.Flush()
		return nil
	})
	switch {
	case err == nil:
	case bw == nil:
		s.writeError(w, r, err)
	case r.Context().Err() == nil:
		_ = enc.Encode(exportErrorLine{Error: s.publicError(r, err)})
		_ = bw.Flush()
	}
}

// publicError is the form of err a client may see: its code and message
// when it is a domain error the API answers, else an internal error
// (logged here).
func (s *Server) publicError(r *http.Request, err error) errorJSON {
	var e *errs.Error
	if errors.As(err, &e) {
		if _, known := statusOf[e.Code]; known {
			return errorJSON{Code: e.Code, Message: e.Message, Retryable: e.Retryable}
		}
	}
	s.log.Error("internal error", "method", r.Method, "route", r.Pattern, "path", loggedPath(r), "err", err)
	return errorJSON{Code: errs.Internal, Message: "internal error"}
}
