package api

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/parley-chat/parley/internal/audit"
	"github.com/parley-chat/parley/internal/errs"
)

// AuditSource gathers the audit events of every node of the cluster.
type AuditSource interface {
	// AuditEvents returns the events f selects of every node that answers,
	// merged oldest first, at most f.Limit (the newest), and the nodes that
	// did not answer.
	AuditEvents(ctx context.Context, f audit.Filter) (*AuditReport, error)
}

// AuditReport is the body of GET /api/v1/audit.
type AuditReport struct {
	Events []audit.Event `json:"events"`
	// Unreachable lists the nodes that did not answer in time: their
	// events are missing.
	Unreachable []string `json:"unreachable"`
}

// auditRoutes registers GET /api/v1/audit when the Server has a source.
func (s *Server) auditRoutes() {
	if s.auditSource == nil {
		return
	}
	s.handleAdmin("GET /api/v1/audit", "read the audit log", s.auditList)
}

// auditList serves GET /api/v1/audit?kind=&actor=&since=&limit= (admin).
func (s *Server) auditList(w http.ResponseWriter, r *http.Request) {
	f, err := auditFilter(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rep, err := s.auditSource.AuditEvents(r.Context(), f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if rep.Events == nil {
		rep.Events = []audit.Event{}
	}
	if rep.Unreachable == nil {
		rep.Unreachable = []string{}
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, rep)
}

// auditFilter reads the query of GET /api/v1/audit: kind and actor exact
// (actor ignoring case), since an RFC 3339 time or Unix milliseconds, limit
// 1 to audit.MaxLimit (default audit.DefaultLimit).
func auditFilter(r *http.Request) (audit.Filter, error) {
	q := r.URL.Query()
	f := audit.Filter{Kind: q.Get("kind"), Actor: q.Get("actor")}
	if v := q.Get("since"); v != "" {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
			f.Since = time.UnixMilli(ms)
		} else if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			f.Since = t
		} else {
			return f, errs.New(errs.Invalid, "since must be an RFC 3339 time or Unix milliseconds, got %q", clip(v))
		}
	}
	limit, has, err := queryUint(r, "limit")
	if err == nil && has && (limit == 0 || limit > audit.MaxLimit) {
		err = errs.New(errs.Invalid, "limit must be between 1 and %d", audit.MaxLimit)
	}
	f.Limit = int(limit)
	return f.Normalized(), err
}

// auditOutcome is the outcome of a user's action that ended with err:
// refused when the credentials or the request were, failed when the
// cluster could not carry it out.
func auditOutcome(err error) string {
	switch errs.CodeOf(err) {
	case "":
		return audit.OK
	case errs.Unauthorized, errs.Forbidden, errs.RateLimited, errs.Invalid, errs.TooLarge, errs.Conflict:
		return audit.Refused
	}
	return audit.Failed
}

// auditSession records a login (user as typed, or as registered when it
// succeeded) or a logout: never a password or token, only the outcome and
// detail, or the error code when err is set.
func (s *Server) auditSession(r *http.Request, kind, user, detail string, err error) {
	e := audit.Event{Kind: kind, Outcome: auditOutcome(err), Actor: user, Remote: s.clientIP(r), Detail: detail}
	if err != nil {
		e.Detail = string(errs.CodeOf(err))
	}
	s.audit.Record(e)
}

// auditRegister records a registration made by a signed-in admin (whatever
// its outcome) and that of the cluster's first user, who becomes its admin.
// Other users signing themselves up are not audited.
func (s *Server) auditRegister(r *http.Request, by Identity, signedIn bool, user string, admin bool, err error) {
	e := audit.Event{Kind: audit.KindUserCreated, Outcome: auditOutcome(err), Remote: s.clientIP(r), Target: user}
	switch {
	case signedIn && by.Admin:
		e.Actor, e.Detail = by.User, "created by an admin"
	case err == nil && admin:
		e.Actor, e.Detail = user, "the first user: an admin"
	default:
		return
	}
	if err != nil {
		e.Detail = string(errs.CodeOf(err))
	}
	s.audit.Record(e)
}
