package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// mustEncode encodes msgs and fails the test on error.
func mustEncode(t testing.TB, msgs []GroupMessage, maxPayload int) encodedBatch {
	t.Helper()
	var e raftEncoder
	b, err := e.encode(msgs, maxPayload)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	return b
}

// splitFrames splits encoder output into frame payloads.
func splitFrames(t testing.TB, data []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for len(data) > 0 {
		if len(data) < frameHeaderLen {
			t.Fatalf("truncated frame header")
		}
		n := int(binary.BigEndian.Uint32(data))
		if len(data) < frameHeaderLen+n {
			t.Fatalf("truncated frame: want %d bytes, have %d", n, len(data)-frameHeaderLen)
		}
		out = append(out, data[frameHeaderLen:frameHeaderLen+n])
		data = data[frameHeaderLen+n:]
	}
	return out
}

// testMessages returns n messages of assorted types and groups.
func testMessages(n int) []GroupMessage {
	msgs := make([]GroupMessage, n)
	for i := range msgs {
		msgs[i] = GroupMessage{Group: uint64(i * 977), Msg: appMsg(uint64(i), []byte(fmt.Sprintf("entry-%d", i)))}
		if i%3 == 1 {
			msgs[i].Msg = raftpb.Message{Type: raftpb.MsgHeartbeat, To: 1, From: 2, Term: 9, Commit: uint64(i)}
		}
	}
	return msgs
}

func TestRaftEncoder_Encode(t *testing.T) {
	t.Run("round trip in one frame", func(t *testing.T) {
		msgs := testMessages(50)
		b := mustEncode(t, msgs, maxRaftFrame)
		if b.frames != 1 || b.sent != 50 || b.skipped != 0 {
			t.Fatalf("got %+v, want 1 frame, 50 sent", b)
		}
		frames := splitFrames(t, b.data)
		got, err := decodeRaftBatch(frames[0])
		if err != nil {
			t.Fatal(err)
		}
		mustEqualMessages(t, got, msgs)
	})
	t.Run("splits at the frame limit", func(t *testing.T) {
		msgs := testMessages(100)
		b := mustEncode(t, msgs, 300)
		frames := splitFrames(t, b.data)
		if len(frames) != b.frames || b.frames < 2 {
			t.Fatalf("got %d frames (reported %d), want several", len(frames), b.frames)
		}
		var got []GroupMessage
		for _, f := range frames {
			if len(f) > 300 {
				t.Fatalf("frame of %d bytes exceeds limit", len(f))
			}
			part, err := decodeRaftBatch(f)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, part...)
		}
		mustEqualMessages(t, got, msgs)
	})
	t.Run("skips a message larger than a frame", func(t *testing.T) {
		msgs := []GroupMessage{
			{Group: 1, Msg: appMsg(1, nil)},
			{Group: 2, Msg: appMsg(2, make([]byte, 1000))},
			{Group: 3, Msg: appMsg(3, nil)},
		}
		b := mustEncode(t, msgs, 200)
		if b.skipped != 1 || b.sent != 2 {
			t.Fatalf("got %+v, want 1 skipped, 2 sent", b)
		}
		var got []GroupMessage
		for _, f := range splitFrames(t, b.data) {
			part, err := decodeRaftBatch(f)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, part...)
		}
		mustEqualMessages(t, got, []GroupMessage{msgs[0], msgs[2]})
	})
}

// mustEqualMessages compares messages by their encoding.
func mustEqualMessages(t testing.TB, got, want []GroupMessage) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d messages, want %d", len(got), len(want))
	}
	for i := range got {
		g, _ := got[i].Msg.Marshal()
		w, _ := want[i].Msg.Marshal()
		if got[i].Group != want[i].Group || !bytes.Equal(g, w) {
			t.Fatalf("message %d: got group %d %v, want group %d %v", i, got[i].Group, got[i].Msg, want[i].Group, want[i].Msg)
		}
	}
}

func TestDecodeRaftBatch_Errors(t *testing.T) {
	valid := splitFrames(t, mustEncode(t, testMessages(3), maxRaftFrame).data)[0]
	tests := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"bad count varint", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{"count beyond frame", []byte{0x7f, 0, 0}},
		{"truncated", valid[:len(valid)-1]},
		{"trailing bytes", append(append([]byte(nil), valid...), 0)},
		{"length beyond frame", []byte{1, 1, 50, 0}},
		{"bad message", []byte{1, 1, 2, 0xff, 0xff}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeRaftBatch(tc.in); !errors.Is(err, errCorrupt) {
				t.Fatalf("got %v, want errCorrupt", err)
			}
		})
	}
}

func FuzzDecodeRaftBatch(f *testing.F) {
	var e raftEncoder
	for _, n := range []int{0, 1, 5} {
		b, err := e.encode(testMessages(n), maxRaftFrame)
		if err != nil {
			f.Fatal(err)
		}
		if b.frames > 0 {
			f.Add(append([]byte(nil), b.data[frameHeaderLen:]...))
		}
	}
	f.Add([]byte{1, 1, 2, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, p []byte) {
		msgs, err := decodeRaftBatch(p)
		if err != nil {
			return
		}
		// What decodes must re-encode and decode to the same messages.
		var e raftEncoder
		b, err := e.encode(msgs, maxRaftFrame)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if len(msgs) == 0 {
			return
		}
		again, err := decodeRaftBatch(b.data[frameHeaderLen:])
		if err != nil {
			t.Fatalf("decode re-encoded: %v", err)
		}
		mustEqualMessages(t, again, msgs)
	})
}
