package node

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/parley-chat/parley/internal/api"
	"github.com/parley-chat/parley/internal/audit"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/pki"
	"github.com/parley-chat/parley/internal/placement"
	"github.com/parley-chat/parley/internal/state"
)

var _ api.JoinTokens = (*Node)(nil)

// errNoClusterCA answers token calls in a cluster without its own CA.
var errNoClusterCA = errs.New(errs.Conflict, "this cluster has no CA of its own (it runs --insecure or the operator's --cluster-tls-* certificates): nodes join without tokens")

// ListJoinTokens implements api.JoinTokens: the tokens not expired, oldest
// first.
func (n *Node) ListJoinTokens(ctx context.Context) ([]api.JoinToken, error) {
	if n.ident.Load() == nil {
		return nil, errNoClusterCA
	}
	var toks []placement.JoinToken
	_, fnErr, err := n.router.ReadLocal(ctx, placement.MetaGroup, true, func(r state.Reader) (err error) {
		toks, err = placement.LoadTokens(r)
		return err
	})
	if err = errors.Join(err, fnErr); err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "cannot read the join tokens")
	}
	now := n.clock.Now().UnixMilli()
	toks = slices.DeleteFunc(toks, func(t placement.JoinToken) bool { return t.ExpiresMs != 0 && t.ExpiresMs <= now })
	slices.SortFunc(toks, func(a, b placement.JoinToken) int { return int(a.CreatedMs - b.CreatedMs) })
	out := make([]api.JoinToken, 0, len(toks))
	for _, t := range toks {
		out = append(out, apiToken(t, ""))
	}
	return out, nil
}

// CreateJoinToken implements api.JoinTokens.
func (n *Node) CreateJoinToken(ctx context.Context, name string, ttl time.Duration) (api.JoinToken, error) {
	id := n.ident.Load()
	if id == nil {
		return api.JoinToken{}, errNoClusterCA
	}
	tok, err := pki.NewToken(pki.Pin(id.CA))
	if err != nil {
		return api.JoinToken{}, err
	}
	now := time.Now()
	rec := placement.JoinToken{ID: tok.ID, Hash: pki.HashSecret(tok.Secret), Name: name, CreatedMs: now.UnixMilli()}
	if ttl > 0 {
		rec.ExpiresMs = now.Add(ttl).UnixMilli()
	}
	if err := n.proposeAdmin(ctx, placement.AddToken{Token: rec}); err != nil {
		return api.JoinToken{}, err
	}
	n.audit.Record(audit.Event{Kind: audit.KindJoinToken, Target: tok.ID, Detail: "join token created"})
	return apiToken(rec, tok.String()), nil
}

// RevokeJoinToken implements api.JoinTokens.
func (n *Node) RevokeJoinToken(ctx context.Context, id string) error {
	if n.ident.Load() == nil {
		return errNoClusterCA
	}
	err := n.proposeAdmin(ctx, placement.RevokeToken{ID: id})
	if errors.Is(err, placement.CodeNoSuchToken) {
		return errs.New(errs.NotFound, "no join token %q", id)
	}
	if err != nil {
		return err
	}
	n.audit.Record(audit.Event{Kind: audit.KindJoinToken, Target: id, Detail: "join token revoked"})
	return nil
}

// RotateJoinTokens implements api.JoinTokens: a new token, every other one
// revoked, and a new gossip key (the old one stays accepted until the next
// rotation, so nodes that have not installed the new one yet still talk).
func (n *Node) RotateJoinTokens(ctx context.Context) (api.JoinToken, error) {
	old, err := n.ListJoinTokens(ctx)
	if err != nil {
		return api.JoinToken{}, err
	}
	fresh, err := n.CreateJoinToken(ctx, "rotated", 0)
	if err != nil {
		return api.JoinToken{}, err
	}
	for _, t := range old {
		if err := n.RevokeJoinToken(ctx, t.ID); err != nil && !errs.Is(err, errs.NotFound) {
			return api.JoinToken{}, err
		}
	}
	key, err := newGossipKey()
	if err != nil {
		return api.JoinToken{}, err
	}
	if err := n.proposeAdmin(ctx, placement.RotateGossipKey{Key: key}); err != nil {
		return api.JoinToken{}, err
	}
	n.audit.Record(audit.Event{Kind: audit.KindJoinToken, Target: fresh.ID, Detail: "join tokens rotated: every other token revoked, new gossip key in use"})
	return fresh, nil
}

// apiToken describes a stored token; whole is the token string when it was
// just made.
func apiToken(t placement.JoinToken, whole string) api.JoinToken {
	out := api.JoinToken{ID: t.ID, Name: t.Name, CreatedAt: time.UnixMilli(t.CreatedMs).UTC(), Token: whole}
	if t.ExpiresMs != 0 {
		e := time.UnixMilli(t.ExpiresMs).UTC()
		out.ExpiresAt = &e
	}
	return out
}
