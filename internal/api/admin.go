package api

import (
	"fmt"
	"net/http"

	"github.com/parley-chat/parley/internal/audit"
	"github.com/parley-chat/parley/internal/errs"
)

// handleAdmin registers h under pattern for admins only: a request that is
// not signed in gets handleAuth's answer, a signed-in user who is not an
// admin 403 "only an admin may <what>". Every call, refused or allowed, is
// audited (audit.KindAdmin: actor, client address, route, outcome and the
// answer's status), so a route registered here needs no audit code of its
// own.
func (s *Server) handleAdmin(pattern, what string, h http.HandlerFunc) {
	rt := newRoute(pattern, AdminOnly)
	s.addRouteOf(rt, func(w http.ResponseWriter, r *http.Request) {
		e := audit.Event{Kind: audit.KindAdmin, Remote: s.clientIP(r), Target: r.Pattern}
		id, err := s.authorize(r, rt)
		if err != nil {
			e.Outcome, e.Detail = audit.Refused, "not signed in: "+string(errs.CodeOf(err))
			if errs.Is(err, errs.Forbidden) {
				e.Actor, e.Detail = id.User, "the API token's scopes do not allow it"
			}
			s.audit.Record(e)
			s.writeError(w, r, err)
			return
		}
		e.Actor = id.User
		if !id.Admin {
			e.Outcome, e.Detail = audit.Refused, "not an admin"
			s.audit.Record(e)
			s.writeError(w, r, errs.New(errs.Forbidden, "only an admin may %s", what))
			return
		}
		rec := &recorder{ResponseWriter: w}
		h(rec, r.WithContext(withIdentity(r.Context(), id)))
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		e.Outcome = audit.OK
		if status >= 400 {
			e.Outcome = audit.Failed
		}
		e.Detail = fmt.Sprintf("%s %s: %d", r.Method, r.URL.Path, status)
		s.audit.Record(e)
	})
}
