package stream

import (
	"encoding/json"
	"fmt"

	"github.com/parley-chat/parley/internal/kv"
)

// KV watch frame types (a kv subscription beside rooms).
const (
	TypeKVReady = "kv_ready" // server: the watch's starting position
	TypeKVEvent = "kv_event" // server: one revision's events of a watch
)

// MaxKVSubscriptions bounds the kv watches of one connection.
const MaxKVSubscriptions = 64

// KVSubscription is the "kv" object of a client's subscribe or unsubscribe
// frame: {"id","key"|"prefix","after"}. ID names the watch in the frames
// that answer it (default: the key, or the prefix); After is a resume
// token (kv.FormatToken), empty for "from now".
type KVSubscription struct {
	ID     string  `json:"id,omitempty"`
	Key    string  `json:"key,omitempty"`
	Prefix *string `json:"prefix,omitempty"`
	After  string  `json:"after,omitempty"`
}

// Name is the watch's id: ID, else the key, else the prefix.
func (k KVSubscription) Name() string {
	switch {
	case k.ID != "":
		return k.ID
	case k.Key != "":
		return k.Key
	case k.Prefix != nil:
		return *k.Prefix
	}
	return ""
}

// Match is what the watch selects.
func (k KVSubscription) Match() kv.Match {
	m := kv.Match{Key: k.Key}
	if k.Prefix != nil {
		m.Prefix = *k.Prefix
	}
	return m
}

// KVEvent is the JSON form of one kv event, in kv_event frames and the
// Server-Sent Events of GET /api/v1/kv/watch. Value is base64; a delete
// or an expiry has none.
type KVEvent struct {
	Type       kv.EventType `json:"type"`
	Key        string       `json:"key"`
	Revision   uint64       `json:"revision"`
	Version    uint64       `json:"version"`
	ModifiedMs int64        `json:"modified_ms"`
	Value      []byte       `json:"value,omitempty"`
}

// KVEvents returns the JSON forms of events.
func KVEvents(events []kv.Event) []KVEvent {
	out := make([]KVEvent, len(events))
	for i, e := range events {
		out[i] = KVEvent{Type: e.Type, Key: e.Key, Revision: e.Revision, Version: e.Version, ModifiedMs: e.ModifiedMs}
		if e.Type == kv.EventPut {
			out[i].Value = e.Value
			if out[i].Value == nil {
				out[i].Value = []byte{}
			}
		}
	}
	return out
}

// KVRevision is the body of a kv_event frame (and of an SSE kv event):
// every event one revision of one partition made to the keys a watch
// selects, and the watch's resume token after it.
type KVRevision struct {
	Type      string    `json:"type,omitempty"`
	KV        string    `json:"kv,omitempty"`
	Partition uint64    `json:"partition"`
	Revision  uint64    `json:"revision"`
	Events    []KVEvent `json:"events"`
	Token     string    `json:"token"`
}

// SplitRevisions cuts a watch's batch of partition p into revisions, each
// with the resume token after it (pos is the position after the batch).
func SplitRevisions(p uint64, events []kv.Event, pos map[uint64]uint64) []KVRevision {
	var out []KVRevision
	at := make(map[uint64]uint64, len(pos))
	for k, v := range pos {
		at[k] = v
	}
	for i := 0; i < len(events); {
		j := i
		for j < len(events) && events[j].Revision == events[i].Revision {
			j++
		}
		at[p] = events[i].Revision
		out = append(out, KVRevision{Partition: p, Revision: events[i].Revision, Events: KVEvents(events[i:j]), Token: kv.FormatToken(at)})
		i = j
	}
	return out
}

// EncodeKVRevision returns the kv_event frame of watch id for r.
func EncodeKVRevision(id string, r KVRevision) []byte {
	r.Type, r.KV = TypeKVEvent, id
	b, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("stream: encode kv event: %v", err))
	}
	return b
}

// kvReadyFrame is {"type":"kv_ready","kv","token"}.
type kvReadyFrame struct {
	Type  string `json:"type"`
	KV    string `json:"kv"`
	Token string `json:"token"`
}

// EncodeKVReady returns the frame telling watch id its starting position.
func EncodeKVReady(id, token string) []byte {
	b, _ := json.Marshal(kvReadyFrame{Type: TypeKVReady, KV: id, Token: token})
	return b
}

// KVErrorFrameFor returns the error frame ending watch id,
// {"type":"error","kv","code","message"}: history compacted, invalid, not
// found... or a generic unavailable error that reveals nothing of an
// unexpected failure.
func KVErrorFrameFor(id string, err error) []byte {
	return errorFrameOf(errorFrame{KV: id}, err, "the watch cannot go on right now; subscribe again with the last token")
}
