package chat

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"github.com/parley-chat/parley/internal/compat"
	"strings"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/text"
	"github.com/parley-chat/parley/internal/wire"
)

// hookSecretBytes is the random part of a hook secret: 256 bits.
const hookSecretBytes = 32

// hookSecretLen is the length of a secret once encoded (unpadded
// base64url).
var hookSecretLen = base64.RawURLEncoding.EncodedLen(hookSecretBytes)

// Hook describes an incoming webhook of a room. The cluster keeps only its
// secret's SHA-256: Secret is set in CreateHook's answer alone.
type Hook struct {
	// ID names the hook in its room: 16 hex digits.
	ID   string `json:"id"`
	Room string `json:"room"`
	// Name is the bot name its posts show unless a post gives another.
	Name      string `json:"name"`
	Creator   string `json:"creator"`
	CreatedAt int64  `json:"created_at"`
	// Key is the hook's public name, the first segment of its URL after
	// /api/v1/hooks/: "<room>.<id>".
	Key    string `json:"key"`
	Secret string `json:"secret,omitempty"`
}

// HookKey returns the public name of room's hook id, "<room>.<id>": the
// room routes a post to its partition, as a token's username does.
func HookKey(room, id string) string { return room + "." + id }

// parseHookKey splits a public hook name into its room and id.
func parseHookKey(key string) (room, id string, ok bool) {
	if len(key) < hookIDLen+2 || key[len(key)-hookIDLen-1] != '.' {
		return "", "", false
	}
	room, id = key[:len(key)-hookIDLen-1], key[len(key)-hookIDLen:]
	return room, id, isCanonicalRoom(room) && validHookID(id)
}

// CheckBotName checks a bot name given as field: 1 to MaxBotName bytes of
// one line of text (internal/text), not blank; the errs.Invalid names
// field.
func CheckBotName(field, name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return errs.New(errs.Invalid, "%s: a bot name must not be empty", field)
	case len(name) > MaxBotName:
		return errs.New(errs.Invalid, "%s: a bot name is at most %d bytes", field, MaxBotName)
	}
	if err := text.Check(name, text.Line); err != nil {
		return errs.New(errs.Invalid, "%s: %v", field, err)
	}
	return nil
}

// hooksReady refuses hook commands until every node of the cluster speaks
// HookProtocol.
func (s *Service) hooksReady() error {
	return compat.Require(s.cfg.ClusterProtocol, HookProtocol, "webhooks")
}

// CreateHook adds an incoming webhook to room that posts as the bot name:
// for the room's owner or, with isAdmin, an administrator (errs.Forbidden).
// The answer carries the secret, which is never shown again. It is not
// idempotent: a retry makes another hook, which the owner can list and
// revoke. Past MaxHooksPerRoom it is errs.Conflict.
func (s *Service) CreateHook(ctx context.Context, user, room, name string, isAdmin bool) (Hook, error) {
	room, err := s.prepareRead(user, room)
	if err != nil {
		return Hook{}, err
	}
	if err := CheckBotName("name", name); err != nil {
		return Hook{}, err
	}
	if err := s.hooksReady(); err != nil {
		return Hook{}, err
	}
	var raw [8 + hookSecretBytes]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return Hook{}, fmt.Errorf("chat: random hook id: %w", err)
	}
	id, secret := hex.EncodeToString(raw[:8]), base64.RawURLEncoding.EncodeToString(raw[8:])
	cmd := CreateHook{Room: room, User: user, Admin: isAdmin, ID: id, Name: name, SecretHash: sha256.Sum256([]byte(secret))}
	res, err := s.propose(ctx, room, "", EncodeCreateHook(cmd))
	if err != nil {
		return Hook{}, fmt.Errorf("chat: create hook in %q: %w", room, err)
	}
	return Hook{ID: id, Room: room, Name: name, Creator: res.User, CreatedAt: res.Ts, Key: HookKey(room, id), Secret: secret}, nil
}

// Hooks lists room's hooks, without their secrets, in id order: for the
// room's owner or an administrator. The read is linearizable.
func (s *Service) Hooks(ctx context.Context, user, room string, isAdmin bool) ([]Hook, error) {
	room, err := s.prepareRead(user, room)
	if err != nil {
		return nil, err
	}
	var recs []*hookRecord
	if _, err := s.r.Read(ctx, s.r.PartitionOf(room), false, func(r state.Reader) error {
		_, refusal, err := ownerRoom(r, room, user, isAdmin, "see its hooks")
		if err != nil {
			return err
		}
		if refusal != nil {
			_, err := DecodeResult(refusal)
			return err
		}
		recs, err = listHooks(r, room)
		return err
	}); err != nil {
		return nil, fmt.Errorf("chat: hooks of %q: %w", room, err)
	}
	out := make([]Hook, len(recs))
	for i, h := range recs {
		out[i] = Hook{ID: h.id, Room: room, Name: h.name, Creator: h.creator, CreatedAt: h.createdAt, Key: HookKey(room, h.id)}
	}
	return out, nil
}

// RevokeHook deletes room's hook id: its URL stops working at once, on
// every node (a post is checked against the hook when it is applied). For
// the room's owner or an administrator; errs.NotFound when there is no such
// hook.
func (s *Service) RevokeHook(ctx context.Context, user, room, id string, isAdmin bool) error {
	return s.removeHook(ctx, user, room, id, "revoke hook", func(room string) []byte {
		return EncodeRevokeHook(RevokeHook{Room: room, User: user, Admin: isAdmin, ID: id})
	})
}

// hookRef checks a request that names room's hook id (incoming or
// outgoing) and returns the room's canonical name.
func (s *Service) hookRef(user, room, id string) (string, error) {
	room, err := s.prepareRead(user, room)
	if err != nil {
		return room, err
	}
	if !validHookID(id) {
		return room, errs.New(errs.Invalid, "hook id: %d hexadecimal digits, as the listing shows", hookIDLen)
	}
	return room, nil
}

// removeHook proposes the command encode builds for the canonical room that
// removes its hook id (what names it in errors).
func (s *Service) removeHook(ctx context.Context, user, room, id, what string, encode func(room string) []byte) error {
	room, err := s.hookRef(user, room, id)
	if err != nil {
		return err
	}
	if err := s.hooksReady(); err != nil {
		return err
	}
	if _, err := s.propose(ctx, room, "", encode(room)); err != nil {
		return fmt.Errorf("chat: %s %q of %q: %w", what, id, room, err)
	}
	return nil
}

// HookPostRequest is a post through a hook: the public key and secret of
// its URL and the payload.
type HookPostRequest struct {
	Key, Secret string
	// Text is the message, checked as a user's post is.
	Text string
	// Name, when not empty, is the bot name of this post (Slack's
	// "username") instead of the hook's.
	Name string
	// IdempotencyKey makes a retry return the first post's result.
	IdempotencyKey string
}

// CheckHookPost checks a hook post's payload as PostHook will: the text as
// a user's post, the bot name if any.
func (s *Service) CheckHookPost(req HookPostRequest) error {
	if err := s.checkText(req.Text); err != nil {
		return err
	}
	if req.Name != "" {
		if err := CheckBotName("username", req.Name); err != nil {
			return err
		}
	}
	return wire.CheckIdempotencyKey(req.IdempotencyKey)
}

// AuthHook checks a hook URL's key and secret: nil when they name a hook of
// a room that exists, errs.NotFound (the same answer whatever is wrong)
// otherwise. The secret's digest is compared in constant time. It proposes
// nothing, so a guesser costs one read, and PostHook checks again when the
// post is applied (a hook revoked in between refuses it).
func (s *Service) AuthHook(ctx context.Context, key, secret string) error {
	room, id, ok := parseHookKey(key)
	if !ok || len(secret) != hookSecretLen {
		return errHookUnknown()
	}
	digest := sha256.Sum256([]byte(secret))
	var found bool
	if _, err := s.r.Read(ctx, s.r.PartitionOf(room), false, func(r state.Reader) error {
		rec, err := getRoom(r, room)
		if err != nil || rec == nil || rec.deleted {
			return err
		}
		h, err := getHook(r, room, id)
		found = h != nil && subtle.ConstantTimeCompare(h.secretHash[:], digest[:]) == 1
		return err
	}); err != nil {
		return fmt.Errorf("chat: hook %q: %w", key, err)
	}
	if !found {
		return errHookUnknown()
	}
	return nil
}

// PostHook posts req's text to the hook's room as its bot (sender
// BotPrefix + name) and returns the post's seq, time and sender. A wrong
// key or secret, or a revoked hook, is errs.NotFound; the payload is
// checked as CheckHookPost does.
func (s *Service) PostHook(ctx context.Context, req HookPostRequest) (PostResult, error) {
	if err := s.CheckHookPost(req); err != nil {
		return PostResult{}, err
	}
	room, id, ok := parseHookKey(req.Key)
	if !ok || len(req.Secret) != hookSecretLen {
		return PostResult{}, errHookUnknown()
	}
	if err := s.hooksReady(); err != nil {
		return PostResult{}, err
	}
	dk := wire.NewDedupKey(req.IdempotencyKey, Tag).String(BotPrefix + req.Key).Raw(req.IdempotencyKey).Done()
	cmd := HookPost{Room: room, ID: id, SecretHash: sha256.Sum256([]byte(req.Secret)), Name: req.Name, Text: req.Text}
	res, err := s.propose(ctx, room, dk, EncodeHookPost(cmd))
	if err != nil {
		return PostResult{}, fmt.Errorf("chat: post through hook: %w", err)
	}
	return PostResult{Seq: res.Seq, Ts: res.Ts, Sender: res.User}, nil
}

func errHookUnknown() error {
	return errs.New(errs.NotFound, "no such hook: it was revoked, or the URL is wrong")
}
