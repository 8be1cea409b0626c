package api

import (
	"net/http"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/kv"
)

// txnRequest is the body of POST /api/v1/kv/txn.
type txnRequest struct {
	Compare []txnCompare `json:"compare"`
	Success []txnOp      `json:"success"`
	Failure []txnOp      `json:"failure"`
}

// txnCompare holds when key's version is version (0: the key is missing),
// or when key holds value (base64); exactly one of them is given.
type txnCompare struct {
	Key     string  `json:"key"`
	Version *uint64 `json:"version"`
	Value   *[]byte `json:"value"`
}

// txnOp is one operation: put (value base64, ttl, lease), delete or get.
type txnOp struct {
	Op    string   `json:"op"`
	Key   string   `json:"key"`
	Value []byte   `json:"value,omitempty"`
	TTL   duration `json:"ttl,omitempty"`
	Lease uint64   `json:"lease,omitempty"`
}

// txnResponse is the answer of POST /api/v1/kv/txn.
type txnResponse struct {
	Succeeded bool          `json:"succeeded"`
	Revision  uint64        `json:"revision"`
	Results   []txnOpResult `json:"results"`
}

type txnOpResult struct {
	Op       string `json:"op"`
	Key      string `json:"key"`
	Found    bool   `json:"found"`
	Version  uint64 `json:"version,omitempty"`
	Revision uint64 `json:"revision,omitempty"`
	Value    []byte `json:"value,omitempty"`
}

var opTypes = map[string]kv.OpType{"put": kv.OpPut, "delete": kv.OpDelete, "get": kv.OpGet}

func opName(t kv.OpType) string {
	for name, v := range opTypes {
		if v == t {
			return name
		}
	}
	return string(rune(t))
}

// txnBody is the body limit of a transaction: its values together may
// take about twice the value limit.
func (s *Server) txnBody() int64 { return 3*s.maxKV + smallBody*8 }

// kvTxn serves POST /api/v1/kv/txn: compare, then run success or failure,
// atomically; every key must share one partition (a {tag} places keys
// together).
func (s *Server) kvTxn(w http.ResponseWriter, r *http.Request) {
	var body txnRequest
	if err := s.decodeJSON(w, r, s.txnBody(), &body, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	req, err := body.toKV()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	req.IdempotencyKey = r.Header.Get("Idempotency-Key")
	res, err := s.kv.Txn(r.Context(), identity(r).User, req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := txnResponse{Succeeded: res.Succeeded, Revision: res.Revision, Results: make([]txnOpResult, len(res.Results))}
	for i, o := range res.Results {
		out.Results[i] = txnOpResult{Op: opName(o.Type), Key: o.Key, Found: o.Found, Version: o.Version, Revision: o.Revision, Value: o.Value}
	}
	writeJSON(w, http.StatusOK, out)
}

// toKV checks the request's shape and converts it; the kv service checks
// keys, sizes and partitions.
func (b txnRequest) toKV() (kv.TxnRequest, error) {
	var req kv.TxnRequest
	for i, c := range b.Compare {
		switch {
		case (c.Version == nil) == (c.Value == nil):
			return req, errs.New(errs.Invalid, "compare[%d]: give exactly one of version (0: the key is missing) and value", i)
		case c.Version != nil:
			req.Compare = append(req.Compare, kv.Compare{Key: c.Key, Version: *c.Version})
		default:
			req.Compare = append(req.Compare, kv.Compare{Key: c.Key, ByValue: true, Value: *c.Value})
		}
	}
	for _, br := range []struct {
		name string
		in   []txnOp
		out  *[]kv.TxnOp
	}{{"success", b.Success, &req.Success}, {"failure", b.Failure, &req.Failure}} {
		for i, op := range br.in {
			t, ok := opTypes[op.Op]
			if !ok {
				return req, errs.New(errs.Invalid, "%s[%d]: op must be put, delete or get, got %q", br.name, i, op.Op)
			}
			if t == kv.OpPut && op.Key == reservedKey {
				return req, errs.New(errs.Invalid, "%s[%d]: the key %q is reserved", br.name, i, reservedKey)
			}
			*br.out = append(*br.out, kv.TxnOp{Type: t, Key: op.Key, Value: op.Value, TTL: op.TTL.D, Lease: op.Lease})
		}
	}
	return req, nil
}
