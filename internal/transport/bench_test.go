package transport

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"
)

// countingHandler counts Raft messages and echoes calls, cheaply.
type countingHandler struct {
	n      atomic.Int64
	notify chan struct{}
}

func (h *countingHandler) HandleRaft(_ string, msgs []GroupMessage) {
	h.n.Add(int64(len(msgs)))
	select {
	case h.notify <- struct{}{}:
	default:
	}
}

func (h *countingHandler) HandleSnapshot(context.Context, string, GroupMessage, io.Reader) error {
	return nil
}

func (h *countingHandler) HandleCall(_ context.Context, _, _ string, body []byte) ([]byte, error) {
	return body, nil
}

// BenchmarkSendRaft measures end-to-end throughput of small MsgApp
// messages, sent in batches of 16 as a Raft Ready would, with at most a
// queue's worth in flight so nothing is dropped.
func BenchmarkSendRaft(b *testing.B) {
	h := &countingHandler{notify: make(chan struct{}, 1)}
	a := mustNew(b, node{id: "a", cluster: "c1"}, newTestHandler())
	r := mustNew(b, node{id: "b", cluster: "c1"}, h)
	const batch, window = 16, DefaultMaxQueuedMessages / 2
	msgs := make([]GroupMessage, batch)
	for i := range msgs {
		msgs[i] = GroupMessage{Group: uint64(i), Msg: appMsg(uint64(i), make([]byte, 64))}
	}
	b.SetBytes(int64(batch * entryLen(1, msgs[0].Msg.Size())))
	b.ReportAllocs()
	b.ResetTimer()
	sent := int64(0)
	for b.Loop() {
		for sent-h.n.Load() > window {
			<-h.notify
		}
		a.SendRaft(r.Addr(), msgs)
		sent += batch
	}
	deadline := time.Now().Add(10 * time.Second)
	for h.n.Load() < sent && time.Now().Before(deadline) {
		select {
		case <-h.notify:
		case <-time.After(10 * time.Millisecond):
		}
	}
	b.StopTimer()
	st := a.Stats()
	if st.RaftDropped > 0 {
		b.Fatalf("%d messages dropped", st.RaftDropped)
	}
	b.ReportMetric(float64(sent)/b.Elapsed().Seconds(), "msgs/s")
	b.ReportMetric(float64(st.RaftSent)/float64(max(st.RaftFramesSent, 1)), "msgs/frame")
}

// BenchmarkCall measures request/response round trips with a 64-byte body,
// one caller at a time and many in parallel.
func BenchmarkCall(b *testing.B) {
	body := make([]byte, 64)
	run := func(b *testing.B, parallel bool) {
		a := mustNew(b, node{id: "a", cluster: "c1"}, newTestHandler())
		r := mustNew(b, node{id: "b", cluster: "c1"}, &countingHandler{notify: make(chan struct{}, 1)})
		ctx := context.Background()
		mustCall(b, a, r.Addr(), "echo", body)
		b.ReportAllocs()
		b.ResetTimer()
		if parallel {
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := a.Call(ctx, r.Addr(), "echo", body); err != nil {
						b.Error(err)
						return
					}
				}
			})
		} else {
			for b.Loop() {
				if _, err := a.Call(ctx, r.Addr(), "echo", body); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	}
	b.Run("sequential", func(b *testing.B) { run(b, false) })
	b.Run("parallel", func(b *testing.B) { run(b, true) })
}

// BenchmarkRaftEncoder_Encode measures marshalling a batch of 64 small
// MsgApp messages into one frame.
func BenchmarkRaftEncoder_Encode(b *testing.B) {
	msgs := make([]GroupMessage, 64)
	for i := range msgs {
		msgs[i] = GroupMessage{Group: uint64(i), Msg: appMsg(uint64(i), make([]byte, 64))}
	}
	var e raftEncoder
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.encode(msgs, maxRaftFrame); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeRaftBatch measures decoding a frame of 64 small MsgApp
// messages.
func BenchmarkDecodeRaftBatch(b *testing.B) {
	msgs := make([]GroupMessage, 64)
	for i := range msgs {
		msgs[i] = GroupMessage{Group: uint64(i), Msg: appMsg(uint64(i), make([]byte, 64))}
	}
	var e raftEncoder
	enc, err := e.encode(msgs, maxRaftFrame)
	if err != nil {
		b.Fatal(err)
	}
	payload := enc.data[frameHeaderLen:]
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeRaftBatch(payload); err != nil {
			b.Fatal(err)
		}
	}
}
