package kv

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
)

// TxnOp is one operation of a transaction as a caller asks for it: Op's
// fields with a TTL instead of milliseconds.
type TxnOp struct {
	Type  OpType
	Key   string
	Value []byte
	TTL   time.Duration
	Lease uint64
}

// TxnRequest is a transaction as a caller asks for it.
type TxnRequest struct {
	Compare          []Compare
	Success, Failure []TxnOp
	IdempotencyKey   string
}

// Txn runs a transaction for user: every key it names must live in one
// partition (keys sharing a {tag} do), else it is refused with
// errs.Invalid naming the partitions. Compares hold when every one does;
// then Success runs, else Failure, atomically at one revision.
func (s *Service) Txn(ctx context.Context, user string, req TxnRequest) (TxnResult, error) {
	p, err := s.txnPartition(req)
	if err != nil {
		return TxnResult{}, err
	}
	dk, err := dedupKeyFor(user, req.IdempotencyKey)
	if err != nil {
		return TxnResult{}, err
	}
	t := Txn{Compare: req.Compare, Keep: uint64(s.lim.History)}
	deadlines := map[uint64]uint64{}
	for _, branch := range []struct {
		in  []TxnOp
		out *[]Op
	}{{req.Success, &t.Success}, {req.Failure, &t.Failure}} {
		for _, op := range branch.in {
			o := Op{Type: op.Type, Key: op.Key, Value: op.Value, Lease: op.Lease, TTLMs: uint64(op.TTL.Milliseconds())}
			if op.Lease != 0 {
				if _, ok := deadlines[op.Lease]; !ok {
					if deadlines[op.Lease], err = s.attach(ctx, op.Lease, p); err != nil {
						return TxnResult{}, err
					}
				}
				o.LeaseDeadlineMs = deadlines[op.Lease]
			}
			*branch.out = append(*branch.out, o)
		}
	}
	res, err := s.r.Propose(ctx, p, dk, EncodeTxn(t))
	if err != nil {
		return TxnResult{}, fmt.Errorf("kv: txn: %w", err)
	}
	return DecodeTxnResult(res)
}

// txnPartition checks a transaction and returns the one partition of its
// keys.
func (s *Service) txnPartition(req TxnRequest) (uint64, error) {
	if len(req.Compare) > s.lim.MaxTxnOps || len(req.Success) > s.lim.MaxTxnOps || len(req.Failure) > s.lim.MaxTxnOps {
		return 0, errs.New(errs.Invalid, "a transaction takes at most %d compares and %d operations per branch", s.lim.MaxTxnOps, s.lim.MaxTxnOps)
	}
	if len(req.Success) == 0 && len(req.Failure) == 0 {
		return 0, errs.New(errs.Invalid, "a transaction needs an operation in success or failure")
	}
	byPart := map[uint64][]string{}
	note := func(key string) { byPart[s.partitionOf(key)] = append(byPart[s.partitionOf(key)], key) }
	for i, c := range req.Compare {
		if err := s.checkKey(c.Key); err != nil {
			return 0, errs.New(errs.CodeOf(err), "compare[%d]: %s", i, message(err))
		}
		note(c.Key)
	}
	for _, b := range []struct {
		name string
		ops  []TxnOp
	}{{"success", req.Success}, {"failure", req.Failure}} {
		written := map[string]bool{}
		for i, op := range b.ops {
			if err := s.checkOp(op); err != nil {
				return 0, errs.New(errs.CodeOf(err), "%s[%d]: %s", b.name, i, message(err))
			}
			if op.Type != OpGet {
				if written[op.Key] {
					return 0, errs.New(errs.Invalid, "%s[%d]: key %q is written twice in one branch", b.name, i, op.Key)
				}
				written[op.Key] = true
			}
			note(op.Key)
		}
	}
	if len(byPart) > 1 {
		parts := make([]string, 0, len(byPart))
		for p, keys := range byPart {
			parts = append(parts, fmt.Sprintf("partition %d (%s)", p, quoteKeys(keys)))
		}
		slices.Sort(parts)
		return 0, errs.New(errs.Invalid, "a transaction's keys must share one partition; these span %s: give related keys one {tag}", strings.Join(parts, ", "))
	}
	for p := range byPart {
		return p, nil
	}
	return 0, errs.New(errs.Invalid, "a transaction needs a key")
}

// checkOp validates one operation of a transaction.
func (s *Service) checkOp(op TxnOp) error {
	switch op.Type {
	case OpPut:
		return s.checkPut(op.Key, op.Value, op.TTL, op.Lease)
	case OpDelete, OpGet:
		if op.TTL != 0 || op.Lease != 0 || op.Value != nil {
			return errs.New(errs.Invalid, "only a put takes a value, ttl or lease")
		}
		return s.checkKey(op.Key)
	default:
		return errs.New(errs.Invalid, "unknown operation %q: use put, delete or get", string(rune(op.Type)))
	}
}

func quoteKeys(keys []string) string {
	slices.Sort(keys)
	keys = slices.Compact(keys)
	if len(keys) > 3 {
		keys = append(keys[:3:3], "...")
	}
	for i, k := range keys {
		if k != "..." {
			keys[i] = fmt.Sprintf("%q", k)
		}
	}
	return strings.Join(keys, ", ")
}

// message is an *errs.Error's message, or err's text.
func message(err error) string {
	if e, ok := errors.AsType[*errs.Error](err); ok {
		return e.Message
	}
	return err.Error()
}

// GetAt reads key as it was at revision rev of its partition
// (linearizable): see the package's GetAt.
func (s *Service) GetAt(ctx context.Context, key string, rev uint64) (Item, error) {
	if err := s.checkKey(key); err != nil {
		return Item{}, err
	}
	var item Item
	_, err := s.r.Read(ctx, s.partitionOf(key), false, func(r state.Reader) error {
		var err error
		item, err = GetAt(r, key, rev)
		return err
	})
	return item, err
}

// History returns the kept versions of key, oldest first (linearizable),
// and the revision of its partition.
func (s *Service) History(ctx context.Context, key string) ([]Event, uint64, error) {
	if err := s.checkKey(key); err != nil {
		return nil, 0, err
	}
	var events []Event
	var rev uint64
	_, err := s.r.Read(ctx, s.partitionOf(key), false, func(r state.Reader) error {
		var err error
		if events, err = History(r, key); err == nil {
			rev, err = Revision(r)
		}
		return err
	})
	return events, rev, err
}
