package chat

import (
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/wire"
)

// Incoming webhooks (docs/API.md "Incoming webhooks"). A hook belongs to a
// room: its record is stored in the room's partition under
// c/<room>/h/<id>, so creating, revoking and posting through it are
// commands of that room, and a post is refused atomically once the hook is
// revoked (Apply checks the hook, not only the Service).
//
// A hook's posts are messages whose sender is BotPrefix and the bot's
// name ("hook:deploy"). ':' is never part of a username, so no user can
// post as a bot and no bot as a user; clients show such senders as bots
// (IsBot).

// Operation bytes of the hook commands, new at HookProtocol: a replica of
// an older build would refuse them, so the Service proposes them only once
// the whole cluster speaks it (Config.ClusterProtocol).
const (
	opCreateHook byte = 'H'
	opRevokeHook byte = 'h'
	opHookPost   byte = 'B'
)

// HookProtocol is the internal protocol (compat.Protocol) that introduced
// the hook commands.
const HookProtocol = 2

// Limits of hooks.
const (
	// MaxHooksPerRoom is the most hooks one room may have.
	MaxHooksPerRoom = 32
	// MaxBotName is the longest bot name in bytes.
	MaxBotName = 64
	// HookSecretHashLen is the length of a secret's digest (SHA-256).
	HookSecretHashLen = 32
	// hookIDLen is the length of a hook id: 16 hex digits.
	hookIDLen = 16
)

// BotPrefix starts the sender of every message posted through a hook.
const BotPrefix = "hook:"

// IsBot reports whether sender is a bot's (a hook's post) rather than a
// user's.
func IsBot(sender string) bool { return strings.HasPrefix(sender, BotPrefix) }

// CreateHook adds the hook ID to Room on behalf of User, its owner or,
// with Admin, an administrator. Name is the bot name its posts show unless
// a post names another; SecretHash is the SHA-256 of its secret.
//
// Encoding: Tag, 'H', flags (admin), Room, User, ID, Name, SecretHash.
type CreateHook struct {
	Room, User string
	Admin      bool
	ID, Name   string
	SecretHash [HookSecretHashLen]byte
}

// RevokeHook deletes the hook ID of Room on behalf of User, its owner or,
// with Admin, an administrator.
//
// Encoding: Tag, 'h', flags (admin), Room, User, ID.
type RevokeHook struct {
	Room, User string
	Admin      bool
	ID         string
}

// HookPost posts Text to Room through hook ID, whose secret's SHA-256 the
// caller gave as SecretHash. Name, when not empty, is the bot name of this
// post instead of the hook's.
//
// Encoding: Tag, 'B', Room, ID, SecretHash, Name (possibly empty), Text
// (the rest).
type HookPost struct {
	Room, ID   string
	SecretHash [HookSecretHashLen]byte
	Name, Text string
}

func (CreateHook) isCommand() {}
func (RevokeHook) isCommand() {}
func (HookPost) isCommand()   {}

// EncodeCreateHook returns the binary encoding of c.
func EncodeCreateHook(c CreateHook) []byte {
	b := hookHead(opCreateHook, c.Admin, c.Room, c.User, c.ID)
	b = wire.AppendString(b, c.Name)
	return wire.AppendString(b, string(c.SecretHash[:]))
}

// EncodeRevokeHook returns the binary encoding of c.
func EncodeRevokeHook(c RevokeHook) []byte {
	return hookHead(opRevokeHook, c.Admin, c.Room, c.User, c.ID)
}

// EncodeHookPost returns the binary encoding of c.
func EncodeHookPost(c HookPost) []byte {
	b := make([]byte, 0, 2+4*binary.MaxVarintLen64+len(c.Room)+len(c.ID)+HookSecretHashLen+len(c.Name)+len(c.Text))
	b = append(b, Tag, opHookPost)
	b = wire.AppendString(wire.AppendString(b, c.Room), c.ID)
	b = wire.AppendString(b, string(c.SecretHash[:]))
	b = wire.AppendString(b, c.Name)
	return append(b, c.Text...)
}

// hookHead encodes Tag, op, flags (admin), room, user, id.
func hookHead(op byte, admin bool, room, user, id string) []byte {
	var flags byte
	if admin {
		flags = flagAdmin
	}
	b := make([]byte, 0, 3+5*binary.MaxVarintLen64+len(room)+len(user)+len(id)+MaxBotName+HookSecretHashLen)
	b = append(b, Tag, op, flags)
	return wire.AppendString(wire.AppendString(wire.AppendString(b, room), user), id)
}

// hash reads a length-prefixed SHA-256 digest.
func (d *decoder) hash() (h [HookSecretHashLen]byte) {
	s := d.bytes()
	if d.err == nil && len(s) != HookSecretHashLen {
		d.fail("a secret hash of %d bytes", len(s))
	}
	copy(h[:], s)
	return h
}

// decodeHookCommand decodes the commands of this file; ok is false for
// another operation.
func decodeHookCommand(op byte, d *decoder) (c Command, ok bool) {
	switch op {
	case opCreateHook:
		return CreateHook{Admin: d.flags(flagAdmin) != 0, Room: d.name(), User: d.name(), ID: d.name(), Name: d.name(), SecretHash: d.hash()}, true
	case opRevokeHook:
		return RevokeHook{Admin: d.flags(flagAdmin) != 0, Room: d.name(), User: d.name(), ID: d.name()}, true
	case opHookPost:
		p := HookPost{Room: d.name(), ID: d.name(), SecretHash: d.hash(), Name: d.str()}
		p.Text, d.b = string(d.b), nil
		return p, true
	}
	return nil, false
}

// hookRecord is a hook's stored state.
type hookRecord struct {
	id         string
	name       string
	creator    string
	createdAt  int64
	secretHash [HookSecretHashLen]byte
}

// hooksPrefix returns the prefix of room's hook keys: c/<room>/h/.
func hooksPrefix(room string) []byte { return append(roomKeyBuf(room, 2+hookIDLen), 'h', '/') }

// hookKey returns the key of room's hook id.
func hookKey(room, id string) []byte { return append(hooksPrefix(room), id...) }

// encodeHook returns the stored form of h: version, varint createdAt,
// secretHash, name, creator (the id is the key's).
func encodeHook(h *hookRecord) []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+HookSecretHashLen+2+len(h.name)+len(h.creator))
	b = append(b, recordVersion)
	b = binary.AppendVarint(b, h.createdAt)
	b = wire.AppendString(b, string(h.secretHash[:]))
	return wire.AppendString(wire.AppendString(b, h.name), h.creator)
}

// decodeHook decodes the hook record stored under k (id: its id).
func decodeHook(k []byte, id string, v []byte) (*hookRecord, error) {
	d := decoder{b: v}
	if d.byte1() != recordVersion && d.err == nil {
		d.fail("unknown record version")
	}
	h := &hookRecord{id: id, createdAt: d.varint(), secretHash: d.hash(), name: d.name(), creator: d.name()}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return nil, fmt.Errorf("chat: corrupt hook record under %q: %w", k, d.err)
	}
	return h, nil
}

// getHook reads room's hook id; nil when there is none.
func getHook(r state.Reader, room, id string) (*hookRecord, error) {
	k := hookKey(room, id)
	v, found, err := r.Get(k)
	if err != nil {
		return nil, fmt.Errorf("chat: read %q: %w", k, err)
	}
	if !found {
		return nil, nil
	}
	return decodeHook(k, id, v)
}

// listHooks returns room's hooks in id order.
func listHooks(r state.Reader, room string) ([]*hookRecord, error) {
	lo := hooksPrefix(room)
	var out []*hookRecord
	var err error
	scanErr := r.Scan(lo, state.PrefixEnd(lo), func(k, v []byte) bool {
		var h *hookRecord
		if h, err = decodeHook(k, string(k[len(lo):]), v); err != nil {
			return false
		}
		out = append(out, h)
		return true
	})
	if scanErr != nil {
		return nil, fmt.Errorf("chat: scan hooks of %q: %w", room, scanErr)
	}
	return out, err
}

// deleteHooks deletes every hook of room (the room is being deleted: a
// room created again under its name starts without them).
func deleteHooks(w state.Writer, room string) error {
	hooks, err := listHooks(w, room)
	if err != nil {
		return err
	}
	for _, h := range hooks {
		if err := w.Delete(hookKey(room, h.id)); err != nil {
			return fmt.Errorf("chat: delete hook %q of %q: %w", h.id, room, err)
		}
	}
	return nil
}

// ownerRoom loads a command's room and checks that user is its owner or
// admin an administrator (a refusal naming what otherwise).
func ownerRoom(r state.Reader, room, user string, admin bool, what string) (*roomRecord, []byte, error) {
	rec, refusal, err := commandRoom(r, room, user)
	if err != nil || refusal != nil {
		return nil, refusal, err
	}
	if !admin && !ident.EqualFold(user, rec.owner) {
		return nil, refuse(statusForbidden, "only the owner of room %q or an admin may %s", room, what), nil
	}
	return rec, nil, nil
}

func applyCreateHook(w state.Writer, meta state.Meta, c CreateHook) ([]byte, error) {
	if !validHookID(c.ID) {
		return refuse(statusInvalid, "hook id %q is invalid", clip(c.ID)), nil
	}
	if len(c.Name) > MaxBotName {
		return refuse(statusInvalid, "name: a bot name is at most %d bytes", MaxBotName), nil
	}
	if _, refusal, err := ownerRoom(w, c.Room, c.User, c.Admin, "add hooks to it"); err != nil || refusal != nil {
		return refusal, err
	}
	hooks, err := listHooks(w, c.Room)
	if err != nil {
		return nil, err
	}
	if len(hooks) >= MaxHooksPerRoom {
		return refuse(statusConflict, "room %q has %d hooks, the most it may have; revoke one first", c.Room, len(hooks)), nil
	}
	for _, h := range hooks {
		if h.id == c.ID {
			return refuse(statusConflict, "room %q already has a hook %q", c.Room, c.ID), nil
		}
	}
	h := &hookRecord{id: c.ID, name: c.Name, creator: c.User, createdAt: meta.TimeMs, secretHash: c.SecretHash}
	if err := w.Set(hookKey(c.Room, c.ID), encodeHook(h)); err != nil {
		return nil, fmt.Errorf("chat: write hook %q of %q: %w", c.ID, c.Room, err)
	}
	return encodeOK(okResult{op: opCreateHook, ts: meta.TimeMs, user: c.User}), nil
}

func applyRevokeHook(w state.Writer, c RevokeHook) ([]byte, error) {
	if _, refusal, err := ownerRoom(w, c.Room, c.User, c.Admin, "revoke its hooks"); err != nil || refusal != nil {
		return refusal, err
	}
	h, err := getHook(w, c.Room, c.ID)
	if err != nil {
		return nil, err
	}
	if h == nil {
		return refuse(statusNotFound, "room %q has no hook %q", c.Room, clip(c.ID)), nil
	}
	if err := w.Delete(hookKey(c.Room, c.ID)); err != nil {
		return nil, fmt.Errorf("chat: delete hook %q of %q: %w", c.ID, c.Room, err)
	}
	return encodeOK(okResult{op: opRevokeHook}), nil
}

// applyHookPost posts through a hook whose secret matches; a missing
// (revoked) hook and a wrong secret are the same refusal, so the answer
// tells a guesser nothing.
func applyHookPost(w state.Writer, meta state.Meta, c HookPost) ([]byte, error) {
	if c.Text == "" {
		return refuse(statusInvalid, "text is empty"), nil
	}
	if len(c.Name) > MaxBotName {
		return refuse(statusInvalid, "username: a bot name is at most %d bytes", MaxBotName), nil
	}
	if !isCanonicalRoom(c.Room) {
		return refuse(statusInvalid, "room name %q is invalid", clip(c.Room)), nil
	}
	unknown := refuse(statusNotFound, "no such hook: it was revoked, or the URL is wrong")
	rec, err := liveRoom(w, c.Room)
	if errs.Is(err, errs.NotFound) {
		return unknown, nil
	}
	if err != nil {
		return nil, err
	}
	h, err := getHook(w, c.Room, c.ID)
	if err != nil {
		return nil, err
	}
	if h == nil || subtle.ConstantTimeCompare(h.secretHash[:], c.SecretHash[:]) != 1 {
		return unknown, nil
	}
	name := h.name
	if c.Name != "" {
		name = c.Name
	}
	ev := &eventRecord{kind: evPost, sender: BotPrefix + name, text: c.Text}
	seq, ts, err := appendEventTo(w, meta, c.Room, rec, ev)
	if err != nil {
		return nil, err
	}
	if err := queueOutgoing(w, c.Room, seq, ev); err != nil { // outhooks.go
		return nil, err
	}
	if err := setRoom(w, c.Room, rec); err != nil {
		return nil, err
	}
	return encodeOK(okResult{op: opHookPost, seq: seq, ts: ts, user: ev.sender}), nil
}

// validHookID reports whether id has the form of a hook id: 16 lower-case
// hex digits.
func validHookID(id string) bool {
	if len(id) != hookIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
