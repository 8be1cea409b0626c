package queue

import (
	"fmt"

	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/wire"
)

// decoder reads the part of a command after its header. It keeps the first
// error; every read after it returns zero values.
type decoder struct {
	queue, user       string
	admin, more, acks bool
	rest              []byte
	err               error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{errMalformed}, args...)...)
	}
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, rest, err := readUvarint(d.rest)
	if err != nil {
		d.err = err
		return 0
	}
	d.rest = rest
	return v
}

// bounded reads a uvarint of at most hi and at least lo; 0 on failure, so
// a count never sizes an allocation beyond its bound.
func (d *decoder) bounded(what string, lo, hi uint64) uint64 {
	v := d.uvarint()
	if d.err == nil && (v < lo || v > hi) {
		d.fail("%s %d out of [%d, %d]", what, v, lo, hi)
	}
	if d.err != nil {
		return 0
	}
	return v
}

func (d *decoder) byte(what string, hi byte) byte {
	if d.err != nil {
		return 0
	}
	if len(d.rest) == 0 {
		d.fail("missing %s", what)
		return 0
	}
	v := d.rest[0]
	if v > hi {
		d.fail("%s %d above %d", what, v, hi)
	}
	d.rest = d.rest[1:]
	return v
}

func (d *decoder) name(what string, allowEmpty bool) string {
	if d.err != nil {
		return ""
	}
	v, rest, err := readName(d.rest, what, allowEmpty)
	if err != nil {
		d.err = err
		return ""
	}
	d.rest = rest
	return v
}

// bytes reads a uvarint length and at most hi bytes (aliasing the command).
func (d *decoder) bytes(what string, hi int) []byte {
	if d.err != nil {
		return nil
	}
	v, rest, err := wire.Bytes(d.rest, errMalformed)
	if err != nil {
		d.err = err
		return nil
	}
	if len(v) > hi {
		d.fail("%s of %d bytes", what, len(v))
	}
	d.rest = rest
	return v
}

func (d *decoder) settings() SettingsUpdate {
	var u SettingsUpdate
	u.Set = d.byte("settings mask", setAll)
	u.MaxDeliveries = d.uvarint()
	u.DeadLetter = d.name("dead-letter queue", true)
	u.TTLMs = int64(d.bounded("ttl", 0, MaxAckTimeoutMs))
	u.MaxLength = d.uvarint()
	u.DropOldest = d.byte("overflow", 1) == 1
	if d.err == nil && (u.Set == 0 || u.Settings != u.masked().Settings) {
		d.fail("settings outside mask %#x", u.Set)
	}
	return u
}

// masked returns u with the settings outside u.Set zeroed.
func (u SettingsUpdate) masked() SettingsUpdate {
	return SettingsUpdate{Set: u.Set, Settings: u.over(Settings{})}
}

// over returns s with the settings u names set to u's values.
func (u SettingsUpdate) over(s Settings) Settings {
	if u.Set&SetMaxDeliveries != 0 {
		s.MaxDeliveries = u.MaxDeliveries
	}
	if u.Set&SetDeadLetter != 0 {
		s.DeadLetter = u.DeadLetter
	}
	if u.Set&SetTTL != 0 {
		s.TTLMs = u.TTLMs
	}
	if u.Set&SetMaxLength != 0 {
		s.MaxLength = u.MaxLength
	}
	if u.Set&SetOverflow != 0 {
		s.DropOldest = u.DropOldest
	}
	return s
}

func (d *decoder) sendOptions() SendOptions {
	var o SendOptions
	o.Priority = d.byte("priority", MaxPriority)
	o.DelayMs = int64(d.bounded("delay", 0, MaxAckTimeoutMs))
	o.DeliverAtMs = int64(d.bounded("deliver at", 0, 1<<53))
	o.TTLMs = int64(d.bounded("ttl", 0, MaxAckTimeoutMs))
	if g := d.bytes("group", MaxGroupLen); len(g) > 0 {
		if o.Group = string(g); !ident.ValidName(o.Group, MaxGroupLen) {
			d.fail("group %q has characters outside [A-Za-z0-9_.-]", g)
		}
	}
	if d.err == nil && o.DelayMs > 0 && o.DeliverAtMs > 0 {
		d.fail("both a delay and a delivery time")
	}
	return o
}

func (d *decoder) create() Command {
	c := Create{Queue: d.queue, User: d.user}
	if d.more {
		c.Settings = d.settings()
	}
	return c
}

func (d *decoder) send() Command {
	s := Send{Queue: d.queue, User: d.user, To: d.name("receiver", true)}
	if d.more {
		if s.SendOptions = d.sendOptions(); d.err == nil && s.SendOptions == (SendOptions{}) {
			d.fail("options flag without options")
		}
	}
	if d.err == nil && len(d.rest) == 0 {
		d.fail("empty body")
	}
	s.Body, d.rest = d.rest, nil
	return s
}

func (d *decoder) receive() Command {
	r := Receive{Queue: d.queue, User: d.user, From: d.name("sender", true)}
	r.AckTimeoutMs = int64(d.bounded("ack timeout", 0, MaxAckTimeoutMs))
	if d.more {
		r.Max = int(d.bounded("max", 2, MaxBatch))
	}
	if d.acks {
		n := int(d.bounded("acks", 1, MaxBatch))
		r.Acks = make([]Held, 0, n)
		for i := 0; i < n && d.err == nil; i++ {
			id, lease := d.receipt()
			if d.err == nil && i > 0 && id <= r.Acks[i-1].ID {
				d.fail("acks not in increasing message order")
			}
			r.Acks = append(r.Acks, Held{ID: id, Lease: lease})
		}
	}
	return r
}

// receipt reads a message id and lease index, both non-zero.
func (d *decoder) receipt() (id, lease uint64) {
	id, lease = d.uvarint(), d.uvarint()
	if d.err == nil && (id == 0 || lease == 0) {
		d.fail("zero message id or lease")
	}
	return id, lease
}

func (d *decoder) ack() Command {
	id, lease := d.receipt()
	return Ack{Queue: d.queue, User: d.user, ID: id, Lease: lease}
}

// decodeMore decodes the commands of command_more.go.
func (d *decoder) decodeMore(op byte) Command {
	switch op {
	case opBatch:
		b := SendBatch{Queue: d.queue, User: d.user}
		n := d.bounded("batch size", 1, MaxBatch)
		for i := uint64(0); i < n && d.err == nil; i++ {
			s := Send{To: d.name("receiver", true), SendOptions: d.sendOptions()}
			if s.Body = d.bytes("body", len(d.rest)); d.err == nil && len(s.Body) == 0 {
				d.fail("empty body")
			}
			b.Messages = append(b.Messages, s)
		}
		return b
	case opNack:
		n := Nack{Queue: d.queue, User: d.user}
		n.ID, n.Lease = d.receipt()
		n.DelayMs = int64(d.bounded("delay", 0, MaxAckTimeoutMs))
		n.Dead = d.byte("dead", 1) == 1
		n.Reason = string(d.bytes("reason", MaxReasonLen))
		return n
	case opExtend:
		e := Extend{Queue: d.queue, User: d.user}
		e.ID, e.Lease = d.receipt()
		e.AckTimeoutMs = int64(d.bounded("ack timeout", 1, MaxAckTimeoutMs))
		return e
	case opConfig:
		return Configure{Queue: d.queue, User: d.user, Admin: d.admin, Settings: d.settings()}
	case opPurge:
		return Purge{Queue: d.queue, User: d.user, Admin: d.admin}
	case opRedrive:
		return Redrive{Queue: d.queue, User: d.user, Admin: d.admin, Max: int(d.bounded("max", 1, MaxRedrive)), To: d.name("target queue", true)}
	case opImport:
		return d.importCmd()
	case opOutDone:
		return OutDone{Queue: d.queue, User: d.user, Through: d.uvarint(), Dropped: d.byte("dropped", 1) == 1, Incarnation: d.uvarint()}
	case opTick:
		return Tick{Queue: d.queue, User: d.user}
	default:
		d.fail("unknown op %#x", op)
		return nil
	}
}

func (d *decoder) importCmd() Command {
	im := Import{Queue: d.queue, User: d.user, Source: d.name("source queue", false), Incarnation: d.uvarint()}
	n := d.bounded("import size", 1, MaxBatch)
	for i := uint64(0); i < n && d.err == nil; i++ {
		e := ImportEntry{Seq: d.uvarint(), Record: d.bytes("record", len(d.rest))}
		if d.err == nil {
			if m, err := decodeMessageRecord(nil, e.Record); err != nil || !m.portable() {
				d.fail("import entry %d is not a movable message record", e.Seq)
			}
		}
		im.Entries = append(im.Entries, e)
	}
	return im
}
