package stream

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
)

// Frame types, the "type" field of every frame.
const (
	TypeAuth        = "auth"        // client: {"type":"auth","token":"..."}
	TypeSubscribe   = "subscribe"   // client: {"type":"subscribe","room":"r","after":SEQ}
	TypeUnsubscribe = "unsubscribe" // client: {"type":"unsubscribe","room":"r"}
	TypeEvent       = "event"       // server: one room event
	TypeReady       = "ready"       // server: everything up to seq was delivered
	TypeError       = "error"       // server: a room's subscription (or the connection) failed
	TypePresence    = "presence"    // server: a member came online or went offline
	TypeMention     = "mention"     // server: someone mentioned the user, in any room
	TypeTyping      = "typing"      // client: I am typing in room; server: Username is typing in room
)

// Error codes of error frames.
const (
	CodeHistoryCompacted = string(chat.CodeHistoryCompacted) // after is older than the retained history
	CodeForbidden        = string(errs.Forbidden)            // not allowed to read the room
	CodeNotFound         = string(errs.NotFound)             // no such room
	CodeSlowConsumer     = "slow_consumer"                   // the connection fell too far behind; it is closed
	CodeUnauthorized     = string(errs.Unauthorized)         // no valid token, or the session ended; the connection is closed with CloseUnauthorized
	CodeInvalid          = string(errs.Invalid)              // a malformed client frame
	CodeUnavailable      = string(errs.Unavailable)          // the room cannot be read now; subscribe again
)

// CloseUnauthorized is the WebSocket close status that follows the
// connection's unauthorized error frame: the token was refused at sign-in,
// or its session ended (signed out, revoked, expired) while the stream was
// open. Reconnecting with the same token cannot succeed; the client must
// sign in again. 4001 is in the range RFC 6455 leaves to applications and
// echoes HTTP 401.
const CloseUnauthorized = 4001

// MaxClientFrame is the largest frame a client may send, in bytes.
const MaxClientFrame = 4 << 10

// eventFrame is the wire form of an event: the event object with its type.
type eventFrame struct {
	Type string `json:"type"`
	chat.Event
}

// EncodeEvent returns the event frame of e:
// {"type":"event","room","seq","ts","kind","sender","text","to",...}; for an
// entry of a mention inbox (kind mention), the mention frame
// {"type":"mention","room","seq","ts","sender"} naming the room and seq of
// the message that mentions the user.
func EncodeEvent(e chat.Event) []byte {
	if e.Kind == chat.KindMention {
		b, _ := json.Marshal(mentionFrame{Type: TypeMention, Room: e.Origin, Seq: e.Target, Ts: e.Ts, Sender: e.Sender})
		return b
	}
	b, err := json.Marshal(eventFrame{Type: TypeEvent, Event: e})
	if err != nil { // strings and numbers only: cannot happen
		panic(fmt.Sprintf("stream: encode event: %v", err))
	}
	return b
}

// mentionFrame is {"type":"mention","room","seq","ts","sender"}.
type mentionFrame struct {
	Type   string `json:"type"`
	Room   string `json:"room"`
	Seq    uint64 `json:"seq"`
	Ts     int64  `json:"ts"`
	Sender string `json:"sender"`
}

// IsInbox reports whether a Hub room name is a user's mention inbox
// (chat.InboxName) rather than a room.
func IsInbox(room string) bool { return strings.HasPrefix(room, "@") }

// typingFrame is {"type":"typing","room","username"}.
type typingFrame struct {
	Type     string `json:"type"`
	Room     string `json:"room"`
	Username string `json:"username"`
}

// EncodeTyping returns the frame telling room's subscribers that user is
// typing (outside the seq order, never stored).
func EncodeTyping(room, user string) []byte {
	b, _ := json.Marshal(typingFrame{Type: TypeTyping, Room: room, Username: user})
	return b
}

// readyFrame is {"type":"ready","room","seq"}.
type readyFrame struct {
	Type string `json:"type"`
	Room string `json:"room"`
	Seq  uint64 `json:"seq"`
}

// EncodeReady returns the frame telling that every event of room up to seq
// has been delivered.
func EncodeReady(room string, seq uint64) []byte {
	b, _ := json.Marshal(readyFrame{Type: TypeReady, Room: room, Seq: seq})
	return b
}

// errorFrame is {"type":"error","room","code","message"}, or with "kv"
// instead of "room" for a kv watch (kvframe.go), "queue" for a queue
// consumer (queueframe.go).
type errorFrame struct {
	Type    string `json:"type"`
	Room    string `json:"room,omitempty"`
	KV      string `json:"kv,omitempty"`
	Queue   string `json:"queue,omitempty"`
	ID      string `json:"id,omitempty"` // a send frame's id
	Code    string `json:"code"`
	Message string `json:"message"`
}

// EncodeError returns an error frame; room is empty for errors of the whole
// connection.
func EncodeError(room, code, message string) []byte {
	b, _ := json.Marshal(errorFrame{Type: TypeError, Room: room, Code: code, Message: message})
	return b
}

// ErrorFrameFor returns the error frame of a failed subscription to room:
// the code and message of an *errs.Error, or a generic unavailable error
// that reveals nothing of an unexpected failure.
func ErrorFrameFor(room string, err error) []byte {
	return errorFrameOf(errorFrame{Room: room}, err, "the room cannot be read right now; subscribe again")
}

// errorFrameOf fills f (its room or kv watch set) from err: an
// *errs.Error's code and message, else unavailable with fallback, which
// reveals nothing of an unexpected failure.
func errorFrameOf(f errorFrame, err error, fallback string) []byte {
	f.Type, f.Code, f.Message = TypeError, CodeUnavailable, fallback
	var e *errs.Error
	if errors.As(err, &e) && e.Code != errs.Internal {
		f.Code, f.Message = string(e.Code), e.Message
	}
	b, _ := json.Marshal(f)
	return b
}

// presenceFrame is {"type":"presence","room","username","online"}.
type presenceFrame struct {
	Type     string `json:"type"`
	Room     string `json:"room"`
	Username string `json:"username"`
	Online   bool   `json:"online"`
}

// EncodePresence returns the frame telling room's subscribers that user came
// online or went offline (outside the seq order).
func EncodePresence(room, user string, online bool) []byte {
	b, _ := json.Marshal(presenceFrame{Type: TypePresence, Room: room, Username: user, Online: online})
	return b
}

// ClientFrame is a frame a client sends: auth, subscribe, unsubscribe,
// typing, ack or send.
type ClientFrame struct {
	Type  string `json:"type"`
	Room  string `json:"room,omitempty"`
	Token string `json:"token,omitempty"`
	// After is the seq to resume after; nil subscribes from now.
	After *uint64 `json:"after,omitempty"`
	// KV, instead of Room, subscribes to (or unsubscribes from) a kv
	// watch (kvframe.go).
	KV *KVSubscription `json:"kv,omitempty"`
	// Queue, instead of Room, starts (or ends) a queue consumer, or names
	// the consumer an ack frame is for (queueframe.go).
	Queue *QueueConsumer `json:"queue,omitempty"`
	// Receipts are the messages an ack frame acknowledges.
	Receipts []string `json:"receipts,omitempty"`
	// ID and Message are a send frame's idempotency key and message
	// object (as POST …/messages takes it).
	ID      string          `json:"id,omitempty"`
	Message json.RawMessage `json:"message,omitempty"`
}

// DecodeClientFrame decodes and checks a client frame: a JSON object of at
// most MaxClientFrame bytes (a send frame may be larger: the connection's
// read limit bounds it) with a known type, a room, kv watch or queue
// object for subscribe and unsubscribe, a queue object for ack and send,
// and a token for auth. Errors are errs.Invalid with a message for the
// client.
func DecodeClientFrame(b []byte) (ClientFrame, error) {
	var f ClientFrame
	if err := json.Unmarshal(b, &f); err != nil {
		return ClientFrame{}, errs.New(errs.Invalid, "a frame must be a JSON object with a type: %v", jsonProblem(err))
	}
	if len(b) > MaxClientFrame && f.Type != TypeSend {
		// Only a send frame may be larger (a message body); the connection's
		// read limit bounds it.
		return ClientFrame{}, errs.New(errs.Invalid, "frame of %d bytes exceeds the %d byte limit", len(b), MaxClientFrame)
	}
	switch f.Type {
	case TypeTyping:
		if f.Room == "" {
			return f, errs.New(errs.Invalid, "a typing frame needs a room")
		}
	case TypeSubscribe, TypeUnsubscribe:
		if f.Queue != nil {
			return f, checkQueueFrame(f)
		}
		if f.KV != nil {
			return f, checkKVFrame(f)
		}
		if f.Room == "" {
			return f, errs.New(errs.Invalid, "a %s frame needs a room, a kv watch or a queue consumer", f.Type)
		}
	case TypeAck, TypeSend:
		if f.Queue == nil {
			return f, errs.New(errs.Invalid, "%s frame needs a queue object: {\"type\":\"ack\",\"queue\":{\"id\":\"...\"},\"receipts\":[...]} or {\"type\":\"send\",\"queue\":{\"name\":\"...\"},\"id\":\"...\",\"message\":{...}}", article(f.Type))
		}
		return f, checkQueueFrame(f)
	case TypeAuth:
		if f.Token == "" {
			return f, errs.New(errs.Invalid, "an auth frame needs a token")
		}
	case "":
		return f, errs.New(errs.Invalid, "a frame needs a type")
	default:
		return f, errs.New(errs.Invalid, "unknown frame type %q: use subscribe, unsubscribe, typing, ack or send", clip(f.Type))
	}
	return f, nil
}

// article is "an ack" or "a send": a frame type with its article.
func article(typ string) string {
	if typ == TypeAck {
		return "an " + typ
	}
	return "a " + typ
}

// checkKVFrame checks the kv object of a subscribe or unsubscribe frame.
func checkKVFrame(f ClientFrame) error {
	switch {
	case f.Room != "":
		return errs.New(errs.Invalid, "a %s frame takes a room or a kv watch, not both", f.Type)
	case f.KV.Name() == "" && (f.Type == TypeUnsubscribe || f.KV.Prefix == nil):
		return errs.New(errs.Invalid, "a kv %s needs an id, a key or a prefix", f.Type)
	case f.Type == TypeSubscribe && f.KV.Key != "" && f.KV.Prefix != nil:
		return errs.New(errs.Invalid, "a kv watch takes a key or a prefix, not both")
	case f.Type == TypeSubscribe && f.KV.Key == "" && f.KV.Prefix == nil:
		return errs.New(errs.Invalid, "a kv watch needs a key or a prefix (\"\" watches every key)")
	}
	return nil
}

// jsonProblem describes a JSON decoding error without echoing the input.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %q has the wrong type", te.Field)
	}
	return "malformed JSON"
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
