package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/wire"
)

// KVService is what the kv routes need from the key-value store.
type KVService interface {
	PutWith(ctx context.Context, user, key string, value []byte, opt kv.PutOptions) (kv.Written, error)
	Get(ctx context.Context, key string, stale bool) (kv.Item, int64, error)
	GetAt(ctx context.Context, key string, revision uint64) (kv.Item, error)
	History(ctx context.Context, key string) ([]kv.Event, uint64, error)
	Delete(ctx context.Context, user, key string, ifVersion uint64, idempotencyKey string) error
	List(ctx context.Context, prefix, after string, limit int, stale bool) ([]kv.ListItem, int64, error)
	Txn(ctx context.Context, user string, req kv.TxnRequest) (kv.TxnResult, error)
	Grant(ctx context.Context, ttl time.Duration) (kv.LeaseInfo, error)
	KeepAlive(ctx context.Context, id uint64) (kv.LeaseInfo, error)
	Revoke(ctx context.Context, id uint64) error
	Lease(ctx context.Context, id uint64) (kv.LeaseInfo, error)
}

var _ KVService = (*kv.Service)(nil)

// Response headers of the kv routes.
const (
	headerVersion    = "X-Parley-Version"
	headerStaleMs    = "X-Parley-Stale-Ms"
	headerModifiedMs = "X-Parley-Modified-Ms"
	headerRevision   = "X-Parley-Revision"
	headerExpiresMs  = "X-Parley-Expires-Ms"
	headerLease      = "X-Parley-Lease"
)

// putResponse is the body of a successful PUT /api/v1/kv/{key}.
type putResponse struct {
	Key      string `json:"key"`
	Version  uint64 `json:"version"`
	Revision uint64 `json:"revision"`
}

// listResponse is the body of GET /api/v1/kv.
type listResponse struct {
	Keys []listKey `json:"keys"`
}

type listKey struct {
	Key        string `json:"key"`
	Version    uint64 `json:"version"`
	Size       int    `json:"size"`
	ModifiedMs int64  `json:"modified_ms"`
	Revision   uint64 `json:"revision,omitempty"`
	ExpiresMs  int64  `json:"expires_ms,omitempty"`
	Lease      uint64 `json:"lease,omitempty"`
}

// kvPut serves PUT /api/v1/kv/{key...}?ttl=&lease=: the raw body is the
// value. "If-Match: N" makes it a compare-and-swap, "If-None-Match: *" a
// create; ttl (a Go duration) makes the key expire, lease attaches it to a
// lease.
func (s *Server) kvPut(w http.ResponseWriter, r *http.Request) {
	user := identity(r).User
	key := r.PathValue("key")
	opt, err := parsePutLifetime(r, key)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ifVersion, err := parseIfMatch(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	create, err := parseIfNoneMatch(r)
	if err == nil && create && ifVersion != 0 {
		err = errs.New(errs.Invalid, "If-Match and If-None-Match cannot be combined")
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	value, err := s.readBody(w, r, s.maxKV)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	opt.IfVersion, opt.IfAbsent, opt.IdempotencyKey = ifVersion, create, r.Header.Get("Idempotency-Key")
	res, err := s.kv.PutWith(r.Context(), user, key, value, opt)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	setVersion(w, res.Version)
	w.Header().Set(headerRevision, strconv.FormatUint(res.Revision, 10))
	writeJSON(w, http.StatusOK, putResponse{Key: key, Version: res.Version, Revision: res.Revision})
}

// kvGet serves GET /api/v1/kv/{key...}: the raw value, its version in
// X-Parley-Version and ETag, its revision in X-Parley-Revision, and with
// ?consistency=stale X-Parley-Stale-Ms. ?revision=N reads the value as it
// was at revision N of the key's partition; ?history lists the kept
// versions (kvHistory).
func (s *Server) kvGet(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Has("history") {
		s.kvHistory(w, r)
		return
	}
	stale, err := parseConsistency(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	item, staleMs, err := s.kvRead(r, stale)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	h := w.Header()
	setVersion(w, item.Version)
	setItemHeaders(w, item)
	h.Set(headerModifiedMs, strconv.FormatInt(item.ModifiedMs, 10))
	h.Set("Last-Modified", time.UnixMilli(item.ModifiedMs).UTC().Format(http.TimeFormat))
	if stale {
		h.Set(headerStaleMs, strconv.FormatInt(staleMs, 10))
	}
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.Itoa(len(item.Value)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(item.Value)
}

// kvDelete serves DELETE /api/v1/kv/{key...}: 204, with If-Match as for PUT.
func (s *Server) kvDelete(w http.ResponseWriter, r *http.Request) {
	user := identity(r).User
	ifVersion, err := parseIfMatch(r)
	if err == nil && r.Header.Get("If-None-Match") != "" {
		err = errs.New(errs.Invalid, "If-None-Match is not supported on DELETE")
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.kv.Delete(r.Context(), user, r.PathValue("key"), ifVersion, r.Header.Get("Idempotency-Key")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// kvList serves GET /api/v1/kv?prefix=&after=&limit=&consistency=.
func (s *Server) kvList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			s.writeError(w, r, errs.New(errs.Invalid, "limit must be an integer, got %q", v))
			return
		}
		limit = n
	}
	stale, err := parseConsistency(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	items, staleMs, err := s.kv.List(r.Context(), q.Get("prefix"), q.Get("after"), limit, stale)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := listResponse{Keys: make([]listKey, len(items))}
	for i, it := range items {
		out.Keys[i] = listKey{Key: it.Key, Version: it.Version, Size: it.Size, ModifiedMs: it.ModifiedMs,
			Revision: it.Revision, ExpiresMs: it.ExpiresMs, Lease: it.Lease}
	}
	if stale {
		w.Header().Set(headerStaleMs, strconv.FormatInt(staleMs, 10))
	}
	writeJSON(w, http.StatusOK, out)
}

// readBody reads r's body, refusing more than limit bytes with errs.TooLarge.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, errs.New(errs.TooLarge, "body is %d bytes; the limit is %d", r.ContentLength, limit)
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	var b []byte
	var err error
	if r.ContentLength >= 0 {
		// The server guarantees exactly ContentLength bytes.
		b = make([]byte, r.ContentLength)
		_, err = io.ReadFull(body, b)
	} else {
		b, err = io.ReadAll(body)
	}
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, errs.New(errs.TooLarge, "body is over the %d-byte limit", limit)
		}
		return nil, errs.Wrap(errs.Invalid, err, "could not read the request body")
	}
	wire.FingerprintOf(r.Context()).Body(b)
	return b, nil
}

// setVersion sets the version headers of a kv response.
func setVersion(w http.ResponseWriter, v uint64) {
	s := strconv.FormatUint(v, 10)
	w.Header().Set(headerVersion, s)
	w.Header().Set("ETag", `"`+s+`"`)
}

// parseIfMatch reads "If-Match: N" (or the ETag form `"N"`); 0 when absent.
func parseIfMatch(r *http.Request) (uint64, error) {
	h := strings.TrimSpace(r.Header.Get("If-Match"))
	if h == "" {
		return 0, nil
	}
	v, err := strconv.ParseUint(strings.Trim(h, `"`), 10, 64)
	if err != nil || v == 0 {
		return 0, errs.New(errs.Invalid, "If-Match must be a version number above 0, got %q", h)
	}
	return v, nil
}

// parseIfNoneMatch reports whether "If-None-Match: *" asks for a create.
func parseIfNoneMatch(r *http.Request) (bool, error) {
	switch h := strings.TrimSpace(r.Header.Get("If-None-Match")); h {
	case "":
		return false, nil
	case "*":
		return true, nil
	default:
		return false, errs.New(errs.Invalid, `If-None-Match supports only "*", got %q`, h)
	}
}

// parseConsistency reads ?consistency=linearizable|stale; stale is true for
// "stale".
func parseConsistency(r *http.Request) (bool, error) {
	switch v := r.URL.Query().Get("consistency"); v {
	case "", "linearizable":
		return false, nil
	case "stale":
		return true, nil
	default:
		return false, errs.New(errs.Invalid, `consistency must be "linearizable" or "stale", got %q`, v)
	}
}
