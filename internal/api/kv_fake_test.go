package api

import (
	"context"
	"time"

	"github.com/parley-chat/parley/internal/kv"
)

// The rest of KVService on fakeKV: the real service, unrecorded.

func (f *fakeKV) GetAt(ctx context.Context, key string, rev uint64) (kv.Item, error) {
	return f.svc.GetAt(ctx, key, rev)
}

func (f *fakeKV) History(ctx context.Context, key string) ([]kv.Event, uint64, error) {
	return f.svc.History(ctx, key)
}

func (f *fakeKV) Txn(ctx context.Context, user string, req kv.TxnRequest) (kv.TxnResult, error) {
	return f.svc.Txn(ctx, user, req)
}

func (f *fakeKV) Grant(ctx context.Context, ttl time.Duration) (kv.LeaseInfo, error) {
	return f.svc.Grant(ctx, ttl)
}

func (f *fakeKV) KeepAlive(ctx context.Context, id uint64) (kv.LeaseInfo, error) {
	return f.svc.KeepAlive(ctx, id)
}

func (f *fakeKV) Revoke(ctx context.Context, id uint64) error { return f.svc.Revoke(ctx, id) }

func (f *fakeKV) Lease(ctx context.Context, id uint64) (kv.LeaseInfo, error) {
	return f.svc.Lease(ctx, id)
}
