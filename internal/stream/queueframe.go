package stream

import (
	"encoding/json"

	"github.com/parley-chat/parley/internal/errs"
)

// Queue frame types (queue consumers and sends beside rooms and kv
// watches): the server pushes a consumer's messages, leased, as it has
// credit for them, and the client acknowledges them with ack frames; a
// send frame is answered with a sent frame once its message is durable.
const (
	TypeAck          = "ack"           // client: {"type":"ack","queue":{"id"},"receipts":[...]}
	TypeQueueReady   = "queue_ready"   // server: the consumer runs
	TypeQueueMessage = "queue_message" // server: one leased message of a consumer
	TypeSend         = "send"          // client: {"type":"send","queue":{"name"},"id","message":{...}}
	TypeSent         = "sent"          // server: the send id is durable: {"type":"sent","queue","id","message_id","ts"}
)

// Queue consumer bounds.
const (
	// MaxQueueConsumers bounds the queue consumers of one connection.
	MaxQueueConsumers = 16
	// MaxPrefetch bounds the messages a connection's consumers hold,
	// delivered and not yet acknowledged, in all (queue.MaxBatch: one
	// receive takes them all). At the largest message body (64 KiB by
	// default) they fit a subscriber's frame queue (DefaultMaxBytes), so a
	// client that reads slowly holds its consumers back instead of being
	// cut off as a slow consumer.
	MaxPrefetch = 100
)

// QueueConsumer is the "queue" object of a client's subscribe,
// unsubscribe, ack or send frame: {"id","name","prefetch","ack_timeout_ms",
// "from"}. ID names the consumer in the frames that answer it (default:
// the queue's name); only it is read in unsubscribe and ack frames, only
// Name in send frames.
type QueueConsumer struct {
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
	// Prefetch is how many messages the consumer holds, delivered and not
	// acknowledged, at most (default 1).
	Prefetch int `json:"prefetch,omitempty"`
	// AckTimeoutMs is each message's lease (0: 30 s; a consumer always
	// leases).
	AckTimeoutMs int64 `json:"ack_timeout_ms,omitempty"`
	// From takes only messages from this sender.
	From string `json:"from,omitempty"`
}

// Key is the consumer's id: ID, else the queue's name.
func (q QueueConsumer) Key() string {
	if q.ID != "" {
		return q.ID
	}
	return q.Name
}

// checkQueueFrame checks the queue object of a subscribe, unsubscribe,
// ack or send frame.
func checkQueueFrame(f ClientFrame) error {
	q := f.Queue
	if f.Type == TypeSend {
		return checkSendFrame(f)
	}
	switch {
	case f.Room != "" || f.KV != nil:
		return errs.New(errs.Invalid, "a %s frame takes one of a room, a kv watch or a queue consumer", f.Type)
	case q.Key() == "":
		return errs.New(errs.Invalid, "a queue %s needs an id or a name", f.Type)
	case len(q.Key()) > 128:
		return errs.New(errs.Invalid, "a queue consumer id is at most 128 bytes")
	case f.Type == TypeSubscribe && q.Name == "":
		return errs.New(errs.Invalid, "a queue consumer needs the queue's name")
	case f.Type == TypeSubscribe && (q.Prefetch < 0 || q.Prefetch > MaxPrefetch):
		return errs.New(errs.Invalid, "prefetch must be between 1 and %d", MaxPrefetch)
	case f.Type == TypeSubscribe && q.AckTimeoutMs < 0:
		return errs.New(errs.Invalid, "ack_timeout_ms must not be negative")
	case f.Type == TypeAck && len(f.Receipts) == 0:
		return errs.New(errs.Invalid, "an ack frame needs receipts")
	case f.Type == TypeAck && len(f.Receipts) > MaxPrefetch:
		return errs.New(errs.Invalid, "an ack frame takes at most %d receipts", MaxPrefetch)
	}
	for i, r := range f.Receipts {
		if r == "" {
			return errs.New(errs.Invalid, "receipts[%d] is empty", i)
		}
	}
	return nil
}

// checkSendFrame checks a send frame: a queue's name, an id (the send's
// idempotency key: the queue service checks its form) and a message
// object (the queue service checks its fields).
func checkSendFrame(f ClientFrame) error {
	switch {
	case f.Room != "" || f.KV != nil:
		return errs.New(errs.Invalid, "a send frame takes a queue, not a room or a kv watch")
	case f.Queue.Name == "":
		return errs.New(errs.Invalid, "a send frame needs the queue's name: {\"type\":\"send\",\"queue\":{\"name\":\"...\"},\"id\":\"...\",\"message\":{\"body\":\"...\"}}")
	case f.ID == "":
		return errs.New(errs.Invalid, "a send frame needs an id: its idempotency key, named again in its answer")
	case len(f.Message) == 0 || f.Message[0] != '{':
		return errs.New(errs.Invalid, "a send frame needs a message object: {\"body\":\"...\"}")
	}
	return nil
}

// sentFrame is {"type":"sent","queue","id","message_id","ts"}.
type sentFrame struct {
	Type      string `json:"type"`
	Queue     string `json:"queue"`
	ID        string `json:"id"`
	MessageID uint64 `json:"message_id"`
	Ts        int64  `json:"ts"`
}

// EncodeSent returns the frame telling that send id to queue is durable as
// message messageID, sent at ts (Unix ms).
func EncodeSent(queue, id string, messageID uint64, ts int64) []byte {
	b, _ := json.Marshal(sentFrame{Type: TypeSent, Queue: queue, ID: id, MessageID: messageID, Ts: ts})
	return b
}

// SendErrorFrameFor returns the error frame of send id to queue.
func SendErrorFrameFor(queue, id string, err error) []byte {
	return errorFrameOf(errorFrame{Queue: queue, ID: id}, err, "the message may or may not have been sent; send it again with the same id")
}

// queueFrame is {"type":"queue_ready","queue"}. A queue_message frame
// adds "delivery" (EncodeQueueMessage), not "message": error frames carry
// their text in "message".
type queueFrame struct {
	Type  string `json:"type"`
	Queue string `json:"queue"`
}

// EncodeQueueReady returns the frame telling that consumer id runs.
func EncodeQueueReady(id string) []byte {
	b, _ := json.Marshal(queueFrame{Type: TypeQueueReady, Queue: id})
	return b
}

// EncodeQueueMessage returns the frame delivering one message (its JSON
// object as json.Marshal made it, as POST …/receive answers it) to
// consumer id. The object is copied in as it is: marshalling the frame
// would scan and compact it a second time, once per message.
func EncodeQueueMessage(id string, message json.RawMessage) []byte {
	q, _ := json.Marshal(id) // a string: cannot fail
	const head, mid = `{"type":"` + TypeQueueMessage + `","queue":`, `,"delivery":`
	b := make([]byte, 0, len(head)+len(q)+len(mid)+len(message)+1)
	b = append(append(append(append(b, head...), q...), mid...), message...)
	return append(b, '}')
}

// QueueErrorFrameFor returns the error frame of consumer id: the code and
// message of an *errs.Error, or a generic unavailable error.
func QueueErrorFrameFor(id string, err error) []byte {
	return errorFrameOf(errorFrame{Queue: id}, err, "the queue cannot be consumed right now; subscribe again")
}
