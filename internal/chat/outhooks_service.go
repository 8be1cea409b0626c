package chat

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/text"
)

// OutHook describes an outgoing webhook of a room. Secret, which signs
// its deliveries, is set in CreateOutHook's answer alone.
type OutHook struct {
	// ID names the hook in its room: 16 hex digits.
	ID   string `json:"id"`
	Room string `json:"room"`
	Name string `json:"name"`
	URL  string `json:"url"`
	// TriggerWords, when not empty, limit the hook to messages whose first
	// word is one of them; empty means every message.
	TriggerWords []string `json:"trigger_words"`
	Creator      string   `json:"creator"`
	CreatedAt    int64    `json:"created_at"`
	Secret       string   `json:"secret,omitempty"`
}

// OutHookRequest is the body of an outgoing hook's creation.
type OutHookRequest struct {
	Name         string   `json:"name"`
	URL          string   `json:"url"`
	TriggerWords []string `json:"trigger_words,omitempty"`
}

// DeliveryAttempt is one entry of a hook's delivery log.
type DeliveryAttempt struct {
	// ID is the delivery's id (DeliveryID), the same for every attempt.
	ID      string `json:"id"`
	Seq     uint64 `json:"seq"`
	Attempt uint64 `json:"attempt"`
	// Status is the receiver's HTTP status, 0 when none came.
	Status int `json:"status,omitempty"`
	// Error says what went wrong, when something did.
	Error string `json:"error,omitempty"`
	// Outcome is OutcomeRetry, OutcomeDelivered, OutcomeGaveUp or
	// OutcomeDropped.
	Outcome string `json:"outcome"`
	Ts      int64  `json:"ts"`
}

// CheckHookURL checks the form of an outgoing hook's URL: http or https,
// a host, no user information, at most MaxHookURL bytes. Where it may
// point is the node's decision (Config.CheckHookURL).
func CheckHookURL(raw string) (*url.URL, error) {
	if len(raw) > MaxHookURL {
		return nil, errs.New(errs.Invalid, "url: at most %d bytes", MaxHookURL)
	}
	if err := text.Check(raw, text.Line); err != nil {
		return nil, errs.New(errs.Invalid, "url: %v", err)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || raw == "":
		return nil, errs.New(errs.Invalid, "url: not a URL: give http:// or https:// and a host")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, errs.New(errs.Invalid, "url: the scheme must be http or https, not %q", clip(u.Scheme))
	case u.User != nil:
		return nil, errs.New(errs.Invalid, "url: user information (user:password@) is not allowed; put credentials in the path or rely on the signature")
	case u.Hostname() == "":
		return nil, errs.New(errs.Invalid, "url: no host")
	case u.Fragment != "":
		return nil, errs.New(errs.Invalid, "url: no fragment (#...) please")
	}
	return u, nil
}

// checkOutHookRequest checks a creation's fields but the URL's target.
func checkOutHookRequest(req OutHookRequest) error {
	if err := CheckBotName("name", req.Name); err != nil {
		return err
	}
	if _, err := CheckHookURL(req.URL); err != nil {
		return err
	}
	if len(req.TriggerWords) > MaxTriggerWords {
		return errs.New(errs.Invalid, "trigger_words: at most %d", MaxTriggerWords)
	}
	for _, w := range req.TriggerWords {
		if w == "" || len(w) > MaxTriggerWord || strings.ContainsAny(w, " \t\n") {
			return errs.New(errs.Invalid, "trigger_words: each is one word of 1 to %d bytes, no white space", MaxTriggerWord)
		}
		if err := text.Check(w, text.Line); err != nil {
			return errs.New(errs.Invalid, "trigger_words: %v", err)
		}
	}
	return nil
}

// CreateOutHook adds an outgoing webhook to room: for the room's owner or,
// with isAdmin, an administrator (errs.Forbidden). The URL is checked for
// its form and then by Config.CheckHookURL (where it may point); without
// that check every URL is refused. The answer carries the signing secret,
// which is never shown again. Not idempotent: a retry makes another hook.
func (s *Service) CreateOutHook(ctx context.Context, user, room string, req OutHookRequest, isAdmin bool) (OutHook, error) {
	room, err := s.prepareRead(user, room)
	if err != nil {
		return OutHook{}, err
	}
	if err := checkOutHookRequest(req); err != nil {
		return OutHook{}, err
	}
	if s.cfg.CheckHookURL == nil {
		return OutHook{}, errs.New(errs.Forbidden, "url: outgoing webhooks are not enabled on this server")
	}
	if err := s.cfg.CheckHookURL(ctx, req.URL); err != nil {
		return OutHook{}, err
	}
	if err := s.hooksReady(); err != nil {
		return OutHook{}, err
	}
	var raw [8 + hookSecretBytes]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return OutHook{}, fmt.Errorf("chat: random hook id: %w", err)
	}
	id, secret := hex.EncodeToString(raw[:8]), base64.RawURLEncoding.EncodeToString(raw[8:])
	cmd := CreateOutHook{Room: room, User: user, Admin: isAdmin, ID: id, Name: req.Name, URL: req.URL, Secret: secret, Triggers: req.TriggerWords}
	res, err := s.propose(ctx, room, "", EncodeCreateOutHook(cmd))
	if err != nil {
		return OutHook{}, fmt.Errorf("chat: create outgoing hook in %q: %w", room, err)
	}
	return OutHook{ID: id, Room: room, Name: req.Name, URL: req.URL, TriggerWords: triggersOrEmpty(req.TriggerWords),
		Creator: res.User, CreatedAt: res.Ts, Secret: secret}, nil
}

// triggersOrEmpty shows no trigger words as [] rather than null.
func triggersOrEmpty(t []string) []string {
	if t == nil {
		return []string{}
	}
	return t
}

// ownerRead runs fn in a linearizable read of room once it checked that
// user owns it or isAdmin (what: the refusal's verb).
func (s *Service) ownerRead(ctx context.Context, room, user string, isAdmin bool, what string, fn func(r state.Reader) error) error {
	_, err := s.r.Read(ctx, s.r.PartitionOf(room), false, func(r state.Reader) error {
		_, refusal, err := ownerRoom(r, room, user, isAdmin, what)
		if err != nil {
			return err
		}
		if refusal != nil {
			_, err := DecodeResult(refusal)
			return err
		}
		return fn(r)
	})
	return err
}

// OutHooks lists room's outgoing hooks, without their secrets, in id
// order: for the room's owner or an administrator.
func (s *Service) OutHooks(ctx context.Context, user, room string, isAdmin bool) ([]OutHook, error) {
	room, err := s.prepareRead(user, room)
	if err != nil {
		return nil, err
	}
	var recs []*outHookRecord
	if err := s.ownerRead(ctx, room, user, isAdmin, "see its outgoing webhooks", func(r state.Reader) error {
		recs, err = listOutHooks(r, room)
		return err
	}); err != nil {
		return nil, fmt.Errorf("chat: outgoing hooks of %q: %w", room, err)
	}
	out := make([]OutHook, len(recs))
	for i, h := range recs {
		out[i] = OutHook{ID: h.id, Room: room, Name: h.name, URL: h.url, TriggerWords: triggersOrEmpty(h.triggers), Creator: h.creator, CreatedAt: h.createdAt}
	}
	return out, nil
}

// DeleteOutHook deletes room's outgoing hook id and its delivery log: no
// delivery is attempted after it is applied (one in flight may still
// arrive). For the room's owner or an administrator; errs.NotFound when
// there is no such hook.
func (s *Service) DeleteOutHook(ctx context.Context, user, room, id string, isAdmin bool) error {
	return s.removeHook(ctx, user, room, id, "delete outgoing hook", func(room string) []byte {
		return EncodeDeleteOutHook(DeleteOutHook{Room: room, User: user, Admin: isAdmin, ID: id})
	})
}

// Deliveries returns the delivery log of room's outgoing hook id, newest
// first (at most DeliveryLogSize attempts): for the room's owner or an
// administrator; errs.NotFound when there is no such hook.
func (s *Service) Deliveries(ctx context.Context, user, room, id string, isAdmin bool) ([]DeliveryAttempt, error) {
	room, err := s.hookRef(user, room, id)
	if err != nil {
		return nil, err
	}
	out := []DeliveryAttempt{}
	if err := s.ownerRead(ctx, room, user, isAdmin, "see its outgoing webhooks", func(r state.Reader) error {
		h, err := getOutHook(r, room, id)
		if err != nil {
			return err
		}
		if h == nil {
			return errs.New(errs.NotFound, "room %q has no outgoing webhook %q", room, id)
		}
		lo := deliveryKey(room, id, h.logNext-min(h.logNext, DeliveryLogSize))
		var derr error
		err = r.Scan(lo, deliveryKey(room, id, h.logNext), func(k, v []byte) bool {
			var e deliveryRecord
			if e, derr = decodeDelivery(k, v); derr != nil {
				return false
			}
			out = append(out, DeliveryAttempt{ID: DeliveryID(id, e.seq), Seq: e.seq, Attempt: e.attempt, Status: int(e.status),
				Error: e.err, Outcome: outcomeCodes[e.outcome], Ts: e.ts})
			return true
		})
		if err != nil {
			return err
		}
		return derr
	}); err != nil {
		return nil, fmt.Errorf("chat: deliveries of %q: %w", id, err)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}
