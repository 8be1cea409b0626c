package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"sync"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/link"
	"github.com/parley-chat/parley/internal/ratelimit"
)

// maxImportBody is the largest CSV POST /api/v1/links/import reads.
const maxImportBody = 1 << 20

// importWorkers is how many links of one import are created at once.
const importWorkers = 8

// importLineJSON is one line of an import's report: the link created, or
// the error that refused the line.
type importLineJSON struct {
	Line     int        `json:"line"`
	Code     string     `json:"code,omitempty"`
	URL      string     `json:"url,omitempty"`
	ShortURL string     `json:"short_url,omitempty"`
	Error    *errorJSON `json:"error,omitempty"`
}

// importResponse is the body of POST /api/v1/links/import.
type importResponse struct {
	Created int              `json:"created"`
	Failed  int              `json:"failed"`
	Lines   []importLineJSON `json:"lines"`
}

// linkImport serves POST /api/v1/links/import: a CSV body (link.ParseImport)
// of at most link.MaxImportLines links, created as POST /api/v1/links
// would, each counted against the link-creates limit. 200 with a report
// line per CSV line, in file order, even when some failed; 400 or 413 when
// the file as a whole is refused (nothing created). With an idempotency
// key, a retried import returns the same links instead of creating more.
func (s *Server) linkImport(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r, maxImportBody)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	idem, err := idempotencyKey(r, "")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	lines, err := link.ParseImport(bytes.NewReader(body))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := importResponse{Lines: make([]importLineJSON, len(lines))}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(importWorkers, len(lines)) {
		wg.Go(func() {
			for i := range next {
				out.Lines[i] = s.importLine(r, lines[i], idem)
			}
		})
	}
	for i := range lines {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, l := range out.Lines {
		if l.Error != nil {
			out.Failed++
		} else {
			out.Created++
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// importLine creates the link of one parsed line and reports it.
func (s *Server) importLine(r *http.Request, l link.ImportLine, idem string) importLineJSON {
	rep := importLineJSON{Line: l.Line, Code: l.Code, URL: l.URL}
	err := l.Err
	if err == nil {
		err = s.take(r, ratelimit.LinkCreates)
	}
	if err == nil {
		var created link.Link
		created, err = s.links.Create(r.Context(), identity(r).User, l.URL, l.Code, lineKey(idem, l.Line), l.Options)
		if err == nil {
			rep.Code, rep.ShortURL = created.Code, s.shortURL(r, created.Code)
			return rep
		}
	}
	rep.Error = s.lineError(r, err)
	return rep
}

// lineKey derives the idempotency key of one line of an import from the
// request's ("" without one).
func lineKey(idem string, line int) string {
	if idem == "" {
		return ""
	}
	sum := sha256.Sum256([]byte("parley link import\x00" + idem + "\x00" + strconv.Itoa(line)))
	return "import-" + hex.EncodeToString(sum[:16])
}

// lineError turns a line's error into its report, as writeError would
// (internal details are logged, never shown).
func (s *Server) lineError(r *http.Request, err error) *errorJSON {
	var e *errs.Error
	if errors.As(err, &e) {
		if _, known := statusOf[e.Code]; known {
			return &errorJSON{Code: e.Code, Message: e.Message, Retryable: e.Retryable}
		}
	}
	s.log.Error("internal error", "method", r.Method, "route", r.Pattern, "err", err)
	return &errorJSON{Code: errs.Internal, Message: "internal error"}
}
