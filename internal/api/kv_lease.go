package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/kv"
)

// duration is a JSON duration: a Go duration string ("30s", "5m") or a
// number of seconds (as etcd's TTLs are).
type duration struct{ D time.Duration }

// UnmarshalJSON implements json.Unmarshaler.
func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return errs.New(errs.Invalid, "ttl must be a duration such as 30s, got %q", s)
		}
		d.D = v
		return nil
	}
	var n float64
	if err := json.Unmarshal(b, &n); err != nil {
		return errs.New(errs.Invalid, "ttl must be a duration string such as \"30s\" or a number of seconds")
	}
	if n < 0 || n > kv.MaxTTL.Seconds() {
		return errs.New(errs.Invalid, "ttl must be between %v and %v", kv.MinTTL, kv.MaxTTL)
	}
	d.D = time.Duration(n * float64(time.Second))
	return nil
}

// MarshalJSON implements json.Marshaler.
func (d duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.D.String()) }

// leaseRequest is the body of POST /api/v1/leases.
type leaseRequest struct {
	TTL duration `json:"ttl"`
}

// leaseResponse describes a lease.
type leaseResponse struct {
	ID         uint64 `json:"id"`
	TTLMs      uint64 `json:"ttl_ms"`
	DeadlineMs uint64 `json:"deadline_ms"`
	// RemainingMs is the time left by this node's clock; the leader's
	// clock decides.
	RemainingMs int64 `json:"remaining_ms"`
}

func leaseOut(l kv.LeaseInfo) leaseResponse {
	return leaseResponse{ID: l.ID, TTLMs: l.TTLMs, DeadlineMs: l.DeadlineMs, RemainingMs: max(0, int64(l.DeadlineMs)-time.Now().UnixMilli())}
}

// leaseGrant serves POST /api/v1/leases {ttl}: 201 and the new lease.
func (s *Server) leaseGrant(w http.ResponseWriter, r *http.Request) {
	var req leaseRequest
	if err := s.decodeJSON(w, r, smallBody, &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.TTL.D == 0 {
		s.writeError(w, r, errs.New(errs.Invalid, "ttl is required, such as {\"ttl\":\"30s\"}"))
		return
	}
	l, err := s.kv.Grant(r.Context(), req.TTL.D)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, leaseOut(l))
}

// leaseID reads the {id} of a lease route.
func leaseID(r *http.Request) (uint64, error) {
	v := r.PathValue("id")
	id, err := strconv.ParseUint(v, 10, 64)
	if err != nil || id == 0 {
		return 0, errs.New(errs.Invalid, "lease id must be a number, got %q", v)
	}
	return id, nil
}

// leaseKeepAlive serves POST /api/v1/leases/{id}/keepalive: the lease
// renewed for its TTL.
func (s *Server) leaseKeepAlive(w http.ResponseWriter, r *http.Request) {
	id, err := leaseID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	l, err := s.kv.KeepAlive(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, leaseOut(l))
}

// leaseGet serves GET /api/v1/leases/{id}.
func (s *Server) leaseGet(w http.ResponseWriter, r *http.Request) {
	id, err := leaseID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	l, err := s.kv.Lease(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, leaseOut(l))
}

// leaseRevoke serves DELETE /api/v1/leases/{id}: 204 once every key
// attached is deleted.
func (s *Server) leaseRevoke(w http.ResponseWriter, r *http.Request) {
	id, err := leaseID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.kv.Revoke(r.Context(), id); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// kvRoutes registers the kv routes added with revisions: transactions,
// the watch stream and leases (the key routes are in routes()).
func (s *Server) kvRoutes() {
	s.handleAuth("POST /api/v1/kv/txn", s.kvTxn)
	if s.kvWatch != nil {
		s.handleAuth("GET /api/v1/kv/watch", s.kvWatchSSE)
	}
	s.handleAuth("POST /api/v1/leases", s.leaseGrant)
	s.handleAuth("GET /api/v1/leases/{id}", s.leaseGet)
	s.handleAuth("POST /api/v1/leases/{id}/keepalive", s.leaseKeepAlive)
	s.handleAuth("DELETE /api/v1/leases/{id}", s.leaseRevoke)
}
