package chat

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/parley-chat/parley/internal/state"
)

// Payload is the JSON body POSTed to an outgoing hook for one message.
type Payload struct {
	// ID is the delivery's id (DeliveryID): the same on every attempt.
	ID        string `json:"id"`
	Hook      string `json:"hook"`
	HookName  string `json:"hook_name"`
	Room      string `json:"room"`
	Seq       uint64 `json:"seq"`
	Sender    string `json:"sender"`
	Text      string `json:"text"`
	CreatedAt int64  `json:"created_at"`
	// ReplyTo is the thread's root for a reply.
	ReplyTo uint64 `json:"reply_to,omitempty"`
}

// Delivery is an outbox entry due for delivery, with what delivering it
// needs.
type Delivery struct {
	Room, Hook string
	Seq        uint64
	// Due is when the entry became due; it names the entry.
	Due int64
	// Attempt is the number of this attempt, 1 for the first.
	Attempt     uint64
	URL, Secret string
	Payload     Payload
	// Drop, when not empty, says why the entry cannot be delivered (its
	// hook or message is gone): record it dropped without trying.
	Drop string
}

// MaxOutboxScan bounds the outbox entries one DueDeliveries call looks at,
// those it skips included.
const MaxOutboxScan = 4096

// DueDeliveries returns up to limit outbox entries of partition p due at
// nowMs, oldest first, read from the local replica (the caller is the
// partition's leader, whose replica is current). Entries for which skip
// (when not nil) returns true, given the entry's Room, Hook, Seq, Due and
// Attempt, are passed over without counting: the deliverer skips those in
// flight or whose hook is busy, so one slow hook's backlog does not hide
// the others' entries. It looks at no more than MaxOutboxScan entries.
func (s *Service) DueDeliveries(ctx context.Context, p uint64, nowMs int64, limit int, skip func(Delivery) bool) ([]Delivery, error) {
	var out []Delivery
	if _, err := s.r.Read(ctx, p, true, func(r state.Reader) error {
		var err error
		out, err = dueDeliveries(r, nowMs, limit, skip)
		return err
	}); err != nil {
		return nil, fmt.Errorf("chat: due deliveries of partition %d: %w", p, err)
	}
	return out, nil
}

// dueDeliveries reads the outbox entries due at nowMs and fills them in.
func dueDeliveries(r state.Reader, nowMs int64, limit int, skip func(Delivery) bool) ([]Delivery, error) {
	lo := outboxPrefix()
	hi := binary.BigEndian.AppendUint64(outboxPrefix(), uint64(max(nowMs, 0))+1)
	var out []Delivery
	var bad []byte
	scanned := 0
	if err := r.Scan(lo, hi, func(k, v []byte) bool {
		due, room, seq, id, ok := parseOutboxKey(k)
		if !ok {
			bad = append([]byte(nil), k...)
			return false
		}
		scanned++
		d := Delivery{Room: room, Hook: id, Seq: seq, Due: due, Attempt: outboxAttempts(v) + 1}
		if skip == nil || !skip(d) {
			out = append(out, d)
		}
		return len(out) < limit && scanned < MaxOutboxScan
	}); err != nil {
		return nil, fmt.Errorf("chat: scan outbox: %w", err)
	}
	if bad != nil {
		return nil, fmt.Errorf("chat: corrupt outbox key %q", bad)
	}
	for i := range out {
		if err := fillDelivery(r, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// outboxAttempts decodes an outbox entry's value: the attempts made.
func outboxAttempts(v []byte) uint64 {
	n, _ := binary.Uvarint(v)
	return n
}

// fillDelivery reads d's hook and message.
func fillDelivery(r state.Reader, d *Delivery) error {
	h, err := getOutHook(r, d.Room, d.Hook)
	if err != nil {
		return err
	}
	if h == nil {
		d.Drop = "the webhook was deleted"
		return nil
	}
	ev, err := getEvent(r, d.Room, d.Seq)
	if err != nil {
		return err
	}
	switch {
	case ev == nil:
		d.Drop = "the message is no longer kept"
		return nil
	case ev.flags&msgDeleted != 0:
		d.Drop = "the message was deleted"
		return nil
	}
	d.URL, d.Secret = h.url, h.secret
	d.Payload = Payload{ID: DeliveryID(d.Hook, d.Seq), Hook: d.Hook, HookName: h.name, Room: d.Room, Seq: d.Seq,
		Sender: ev.sender, Text: ev.text, CreatedAt: ev.ts, ReplyTo: ev.replyTo}
	return nil
}

// cleanError makes what went wrong fit for the log: valid UTF-8 without
// control characters (it may quote a receiver's status line), at most
// MaxDeliveryError bytes.
func cleanError(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	return clipBytes(s, MaxDeliveryError)
}

// RecordDelivery records the outcome of an attempt at d in partition p:
// ok when the receiver took it; status is its HTTP status (0 when none
// came) and errText what went wrong. A dropped d (d.Drop) is recorded as
// such. The entry is then settled, or due again after DeliveryBackoffMs.
func (s *Service) RecordDelivery(ctx context.Context, p uint64, d Delivery, status int, errText string, ok bool) error {
	c := Delivered{Room: d.Room, ID: d.Hook, Seq: d.Seq, Due: d.Due, Attempt: d.Attempt, Status: uint64(max(status, 0)), Error: cleanError(errText), OK: ok}
	if d.Drop != "" {
		c.Drop, c.OK, c.Error = true, false, d.Drop
	}
	if _, err := s.proposeTo(ctx, p, "", EncodeDelivered(c)); err != nil {
		return fmt.Errorf("chat: record delivery %s: %w", DeliveryID(d.Hook, d.Seq), err)
	}
	return nil
}
