package transport

import (
	"context"
	"io"
)

// Handler receives the traffic arriving at a Transport. It is implemented by
// the node wiring (the multi-Raft driver and the request router). Its
// methods are called concurrently. The from argument is the sender's node id
// as given in its handshake.
type Handler interface {
	// HandleRaft receives a batch of messages from one peer, in the order the
	// peer sent them. It is called on that connection's read goroutine and
	// must not block long. The slice is the handler's to keep.
	HandleRaft(from string, msgs []GroupMessage)

	// HandleSnapshot receives one MsgSnap together with its data stream. It
	// returns after consuming data; a non-nil error is reported to the
	// sender as a *RemoteError. ctx is cancelled when the Transport closes.
	HandleSnapshot(ctx context.Context, from string, msg GroupMessage, data io.Reader) error

	// HandleCall answers one request; method is a short name such as
	// "propose", "read" or "join", body is the handler's to keep. A non-nil
	// error reaches the caller as a *RemoteError carrying err.Error(). ctx
	// carries the caller's deadline and is cancelled when the caller gives up,
	// the connection breaks or the Transport closes.
	HandleCall(ctx context.Context, from string, method string, body []byte) ([]byte, error)
}
