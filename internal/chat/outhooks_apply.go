package chat

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/parley-chat/parley/internal/state"
)

func applyCreateOutHook(w state.Writer, meta state.Meta, c CreateOutHook) ([]byte, error) {
	switch {
	case !validHookID(c.ID):
		return refuse(statusInvalid, "hook id %q is invalid", clip(c.ID)), nil
	case len(c.Name) > MaxBotName:
		return refuse(statusInvalid, "name: at most %d bytes", MaxBotName), nil
	case len(c.URL) > MaxHookURL:
		return refuse(statusInvalid, "url: at most %d bytes", MaxHookURL), nil
	case len(c.Triggers) > MaxTriggerWords:
		return refuse(statusInvalid, "trigger_words: at most %d", MaxTriggerWords), nil
	}
	if _, refusal, err := ownerRoom(w, c.Room, c.User, c.Admin, "add outgoing webhooks to it"); err != nil || refusal != nil {
		return refusal, err
	}
	hooks, err := listOutHooks(w, c.Room)
	if err != nil {
		return nil, err
	}
	if len(hooks) >= MaxOutHooksPerRoom {
		return refuse(statusConflict, "room %q has %d outgoing webhooks, the most it may have; delete one first", c.Room, len(hooks)), nil
	}
	if slices.ContainsFunc(hooks, func(h *outHookRecord) bool { return h.id == c.ID }) {
		return refuse(statusConflict, "room %q already has an outgoing webhook %q", c.Room, c.ID), nil
	}
	h := &outHookRecord{id: c.ID, name: c.Name, url: c.URL, secret: c.Secret, triggers: c.Triggers, creator: c.User, createdAt: meta.TimeMs}
	if err := w.Set(outHookKey(c.Room, c.ID), encodeOutHook(h)); err != nil {
		return nil, fmt.Errorf("chat: write outgoing hook %q of %q: %w", c.ID, c.Room, err)
	}
	return encodeOK(okResult{op: opCreateOutHook, ts: meta.TimeMs, user: c.User}), nil
}

func applyDeleteOutHook(w state.Writer, c DeleteOutHook) ([]byte, error) {
	if _, refusal, err := ownerRoom(w, c.Room, c.User, c.Admin, "delete its outgoing webhooks"); err != nil || refusal != nil {
		return refusal, err
	}
	h, err := getOutHook(w, c.Room, c.ID)
	if err != nil {
		return nil, err
	}
	if h == nil {
		return refuse(statusNotFound, "room %q has no outgoing webhook %q", c.Room, clip(c.ID)), nil
	}
	if err := deleteKey(w, outHookKey(c.Room, c.ID)); err != nil {
		return nil, err
	}
	// The log holds at most DeliveryLogSize entries, below logNext.
	for n := h.logNext - min(h.logNext, DeliveryLogSize); n < h.logNext; n++ {
		if err := deleteKey(w, deliveryKey(c.Room, c.ID, n)); err != nil {
			return nil, err
		}
	}
	// Its outbox entries stay until they are due: the deliverer finds no
	// hook and settles them undelivered (Delivered with Drop).
	return encodeOK(okResult{op: opDeleteOutHook}), nil
}

// queueOutgoing writes an outbox entry, due at once, for each outgoing hook
// of room that message seq (just appended) fires. Whispers fire none: they
// are for their recipients only.
func queueOutgoing(w state.Writer, room string, seq uint64, ev *eventRecord) error {
	if len(ev.to) > 0 || ev.kind != evPost {
		return nil
	}
	hooks, err := listOutHooks(w, room)
	if err != nil {
		return err
	}
	for _, h := range hooks {
		if !MatchesTriggers(ev.text, h.triggers) {
			continue
		}
		if err := w.Set(outboxKey(ev.ts, room, seq, h.id), binary.AppendUvarint(nil, 0)); err != nil {
			return fmt.Errorf("chat: write outbox entry: %w", err)
		}
	}
	return nil
}

// applyDelivered settles or reschedules an outbox entry and logs the
// attempt in the hook's delivery log. An entry already settled (two
// deliverers raced, or the proposal was retried) is left alone; the
// attempt is still logged, since it happened.
func applyDelivered(w state.Writer, meta state.Meta, c Delivered) ([]byte, error) {
	if !isCanonicalRoom(c.Room) || !validHookID(c.ID) {
		return refuse(statusInvalid, "delivery of an invalid room or hook"), nil
	}
	k := outboxKey(c.Due, c.Room, c.Seq, c.ID)
	v, found, err := w.Get(k)
	if err != nil {
		return nil, fmt.Errorf("chat: read %q: %w", k, err)
	}
	outcome := OutcomeRetry
	switch {
	case c.Drop:
		outcome = OutcomeDropped
	case c.OK:
		outcome = OutcomeDelivered
	}
	if found {
		made, n := binary.Uvarint(v)
		if n <= 0 {
			return nil, fmt.Errorf("chat: corrupt outbox entry under %q", k)
		}
		made++
		if err := deleteKey(w, k); err != nil {
			return nil, err
		}
		if outcome == OutcomeRetry && made >= MaxDeliveryAttempts {
			outcome = OutcomeGaveUp
		}
		if outcome == OutcomeRetry {
			next := outboxKey(meta.TimeMs+DeliveryBackoffMs(made), c.Room, c.Seq, c.ID)
			if err := w.Set(next, binary.AppendUvarint(nil, made)); err != nil {
				return nil, fmt.Errorf("chat: write outbox entry: %w", err)
			}
		}
	}
	if err := logDelivery(w, meta, c, outcome); err != nil {
		return nil, err
	}
	return encodeOK(okResult{op: opDelivered}), nil
}

// logDelivery appends an attempt to the delivery log of c's hook, if it
// still exists, dropping the oldest entry past DeliveryLogSize.
func logDelivery(w state.Writer, meta state.Meta, c Delivered, outcome string) error {
	h, err := getOutHook(w, c.Room, c.ID)
	if err != nil || h == nil {
		return err
	}
	e := deliveryRecord{seq: c.Seq, attempt: c.Attempt, status: c.Status, ts: meta.TimeMs,
		outcome: byte(slices.Index(outcomeCodes, outcome)), err: clipBytes(c.Error, MaxDeliveryError)}
	if err := w.Set(deliveryKey(c.Room, c.ID, h.logNext), encodeDelivery(e)); err != nil {
		return fmt.Errorf("chat: write delivery log: %w", err)
	}
	if h.logNext >= DeliveryLogSize {
		if err := deleteKey(w, deliveryKey(c.Room, c.ID, h.logNext-DeliveryLogSize)); err != nil {
			return err
		}
	}
	h.logNext++
	if err := w.Set(outHookKey(c.Room, c.ID), encodeOutHook(h)); err != nil {
		return fmt.Errorf("chat: write outgoing hook %q of %q: %w", c.ID, c.Room, err)
	}
	return nil
}

// clipBytes cuts s to at most n bytes, at a UTF-8 character boundary.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
