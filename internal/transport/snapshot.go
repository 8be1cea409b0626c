package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Snapshot status bytes, the first byte of the receiver's final frame.
const (
	snapOK    byte = 0
	snapError byte = 1 // followed by the handler's error message
)

// errSnapshotAborted stops the sender's data function once the receiver has
// already answered (with an error) before the stream ended.
var errSnapshotAborted = errors.New("receiver ended the snapshot stream")

// SendSnapshot streams one MsgSnap and its data to the peer at addr over a
// dedicated connection. data writes the snapshot payload to w; it is called
// once. SendSnapshot returns nil only when the receiver's HandleSnapshot
// returned nil; a receiver error comes back as a *RemoteError, connection
// failures wrap ErrUnreachable. Cancelling ctx aborts the stream.
func (t *Transport) SendSnapshot(ctx context.Context, addr string, msg GroupMessage, data func(w io.Writer) error) error {
	if err := t.sendSnapshot(ctx, addr, msg, data); err != nil {
		return fmt.Errorf("transport: snapshot for group %d to %s: %w", msg.Group, addr, err)
	}
	t.stats.snapshotsSent.Add(1)
	return nil
}

// snapResult is the receiver's verdict, or the failure to read it.
type snapResult struct {
	status byte
	msg    string
	err    error
}

// sendSnapshot is SendSnapshot without the error context.
func (t *Transport) sendSnapshot(ctx context.Context, addr string, msg GroupMessage, data func(w io.Writer) error) error {
	if d := t.faults.currentDelay(); d > 0 && !sleepCtx(ctx, d) {
		return ctx.Err()
	}
	size := msg.Msg.Size()
	if n := uvarintLen(msg.Group) + size; n > maxRaftFrame {
		return fmt.Errorf("snapshot message of %d bytes exceeds the %d byte frame limit", n, maxRaftFrame)
	}
	l, err := t.dial(ctx, addr, protoSnapshot)
	if err != nil {
		return err
	}
	defer l.close()
	stop := context.AfterFunc(ctx, l.close)
	defer stop()

	results := make(chan snapResult, 1)
	if !t.goroutine(func() { results <- readSnapResult(l) }) {
		return ErrClosed
	}
	res, err := t.streamSnapshot(l, msg, size, data, results)
	if err != nil {
		l.close()
		<-results
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	switch {
	case res.err != nil && ctx.Err() != nil:
		return ctx.Err()
	case res.err != nil:
		return fmt.Errorf("%w: read snapshot status: %w", ErrUnreachable, res.err)
	case res.status != snapOK:
		return &RemoteError{Message: res.msg}
	}
	return nil
}

// streamSnapshot writes the message frame, the data chunks and the
// terminator, then waits for the receiver's verdict. An error means the
// stream failed locally; the verdict reader is still running then.
func (t *Transport) streamSnapshot(l *link, msg GroupMessage, size int, data func(io.Writer) error, results <-chan snapResult) (snapResult, error) {
	hdr := make([]byte, 0, frameHeaderLen+uvarintLen(msg.Group)+size)
	hdr = appendFrameHeader(hdr, uvarintLen(msg.Group)+size)
	hdr = binary.AppendUvarint(hdr, msg.Group)
	hdr, err := appendMarshalled(hdr, &msg.Msg, size)
	if err != nil {
		return snapResult{}, err
	}
	if err := l.writeFull(hdr); err != nil {
		return snapResult{}, fmt.Errorf("%w: write snapshot header: %w", ErrUnreachable, err)
	}
	cw := &chunkWriter{l: l, buf: make([]byte, frameHeaderLen, frameHeaderLen+t.tm.snapChunk), results: results}
	werr := data(cw)
	if werr == nil {
		werr = cw.finish()
	}
	if cw.early != nil {
		return *cw.early, nil
	}
	if werr != nil {
		return snapResult{}, fmt.Errorf("snapshot data: %w", werr)
	}
	return <-results, nil
}

// readSnapResult reads the receiver's final status frame.
func readSnapResult(l *link) snapResult {
	p, err := readFrame(l.br, nil, maxCallFrame)
	if err != nil {
		return snapResult{err: err}
	}
	if len(p) == 0 {
		return snapResult{err: fmt.Errorf("%w: empty snapshot status", errCorrupt)}
	}
	return snapResult{status: p[0], msg: string(p[1:])}
}

// chunkWriter frames the snapshot data: length-prefixed chunks, then a
// zero-length terminator. It stops early when the receiver has answered.
type chunkWriter struct {
	l       *link
	buf     []byte // frame being filled; the first four bytes are its header
	results <-chan snapResult
	early   *snapResult
}

// Write buffers p, writing a frame whenever a chunk is full.
func (w *chunkWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		n := copy(w.buf[len(w.buf):cap(w.buf)], p)
		w.buf = w.buf[:len(w.buf)+n]
		p = p[n:]
		written += n
		if len(w.buf) == cap(w.buf) {
			if err := w.flush(nil); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

// finish writes the last chunk and the terminator in one write.
func (w *chunkWriter) finish() error {
	return w.flush(make([]byte, frameHeaderLen))
}

// flush writes the buffered chunk (if any) followed by tail.
func (w *chunkWriter) flush(tail []byte) error {
	select {
	case r := <-w.results:
		w.early = &r
		return errSnapshotAborted
	default:
	}
	out := w.buf
	if len(out) > frameHeaderLen {
		putFrameHeader(out, len(out)-frameHeaderLen)
	} else {
		out = out[:0]
	}
	out = append(out, tail...)
	if len(out) > 0 {
		if err := w.l.writeFull(out); err != nil {
			return fmt.Errorf("%w: write snapshot chunk: %w", ErrUnreachable, err)
		}
	}
	w.buf = w.buf[:frameHeaderLen]
	return nil
}

// serveSnapshot receives one snapshot stream on an accepted 'S' connection.
func (t *Transport) serveSnapshot(l *link) {
	p, err := readFrame(l.br, nil, maxRaftFrame)
	if err != nil {
		t.logStreamEnd("snapshot", l, err)
		return
	}
	d := decoder{p: p}
	gm := GroupMessage{Group: d.uvarint()}
	if d.err == nil {
		d.err = gm.Msg.Unmarshal(d.rest())
	}
	if d.err != nil {
		t.log.Warn("transport: bad snapshot header", "peer", l.peerID, "err", d.err)
		return
	}
	cr := &chunkReader{l: l}
	herr := t.h.HandleSnapshot(t.ctx, l.peerID, gm, cr)
	if herr == nil {
		if _, err := io.Copy(io.Discard, cr); err != nil {
			t.logStreamEnd("snapshot", l, err)
			return
		}
		t.stats.snapshotsReceived.Add(1)
	}
	status := appendSnapStatus(herr)
	if err := l.writeFull(status); err != nil {
		t.logStreamEnd("snapshot", l, err)
		return
	}
	if herr != nil {
		// Keep reading until the sender stops, so closing does not reset the
		// connection before the sender has read the status.
		_, _ = io.Copy(io.Discard, cr)
	}
}

// appendSnapStatus builds the receiver's status frame for a handler error.
func appendSnapStatus(herr error) []byte {
	if herr == nil {
		return appendAck(nil, snapOK, "")
	}
	return appendAck(nil, snapError, herr.Error())
}
