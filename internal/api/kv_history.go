package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/stream"
)

// reservedKey is the one key the kv routes cannot reach by GET: GET
// /api/v1/kv/watch is the watch stream. Writes of it are refused, so it
// never exists.
const reservedKey = "watch"

// checkWritableKey refuses the reserved key.
func checkWritableKey(key string) error {
	if key == reservedKey {
		return errs.New(errs.Invalid, "the key %q is reserved: GET /api/v1/kv/watch is the watch stream", reservedKey)
	}
	return nil
}

// parsePutLifetime reads a put's ?ttl= (a Go duration such as 30s) and
// ?lease= (a lease id), and refuses the reserved key.
func parsePutLifetime(r *http.Request, key string) (kv.PutOptions, error) {
	var opt kv.PutOptions
	if err := checkWritableKey(key); err != nil {
		return opt, err
	}
	q := r.URL.Query()
	if v := q.Get("ttl"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return opt, errs.New(errs.Invalid, "ttl must be a duration such as 30s or 5m, got %q", v)
		}
		opt.TTL = d
	}
	if v := q.Get("lease"); v != "" {
		id, err := strconv.ParseUint(v, 10, 64)
		if err != nil || id == 0 {
			return opt, errs.New(errs.Invalid, "lease must be a lease id, got %q", v)
		}
		opt.Lease = id
	}
	if opt.TTL != 0 && opt.Lease != 0 {
		return opt, errs.New(errs.Invalid, "a key takes a ttl or a lease, not both")
	}
	return opt, nil
}

// kvRead reads the key of r: at ?revision=N when given, else now.
func (s *Server) kvRead(r *http.Request, stale bool) (kv.Item, int64, error) {
	key := r.PathValue("key")
	v := r.URL.Query().Get("revision")
	if v == "" {
		return s.kv.Get(r.Context(), key, stale)
	}
	rev, err := strconv.ParseUint(v, 10, 64)
	if err != nil || rev == 0 {
		return kv.Item{}, 0, errs.New(errs.Invalid, "revision must be a number above 0, got %q", v)
	}
	if stale {
		return kv.Item{}, 0, errs.New(errs.Invalid, "revision reads are linearizable: drop consistency=stale")
	}
	item, err := s.kv.GetAt(r.Context(), key, rev)
	return item, 0, err
}

// setItemHeaders sets the revision, expiry and lease headers of a kv read.
func setItemHeaders(w http.ResponseWriter, item kv.Item) {
	h := w.Header()
	h.Set(headerRevision, strconv.FormatUint(item.Revision, 10))
	if item.ExpiresMs != 0 {
		h.Set(headerExpiresMs, strconv.FormatInt(item.ExpiresMs, 10))
	}
	if item.Lease != 0 {
		h.Set(headerLease, strconv.FormatUint(item.Lease, 10))
	}
}

// kvHistoryResponse is the body of GET /api/v1/kv/{key}?history.
type kvHistoryResponse struct {
	Key string `json:"key"`
	// Revision is the key's partition's revision at the read.
	Revision uint64           `json:"revision"`
	Versions []stream.KVEvent `json:"versions"`
}

// kvHistory serves GET /api/v1/kv/{key...}?history: the kept versions of
// the key, oldest first (linearizable).
func (s *Server) kvHistory(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	events, rev, err := s.kv.History(r.Context(), key)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, kvHistoryResponse{Key: key, Revision: rev, Versions: stream.KVEvents(events)})
}
