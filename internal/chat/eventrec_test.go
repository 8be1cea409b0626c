package chat

import (
	"bytes"
	"testing"
)

// FuzzDecodeEventRecord: a stored event decodes without panicking, and what
// decodes re-encodes to what decodes alike.
func FuzzDecodeEventRecord(f *testing.F) {
	f.Add(encodeEvent(&eventRecord{kind: evPost, ts: 5, sender: "a", to: []string{"b"}, text: "hi", replyTo: 2,
		mentions: []string{"b"}, reactions: []reactionRec{{emoji: "👍", users: []string{"a", "b"}}}, flags: msgPinned}))
	f.Add(encodeEvent(&eventRecord{kind: evReact, ts: 6, sender: "b", target: 3, arg: ":tada:"}))
	f.Add(encodeEvent(&eventRecord{kind: evJoin, ts: 1, sender: "a"}))
	f.Add(encodeEvent(&eventRecord{kind: evPost, ts: 7, sender: "a", text: "see", flags: msgFiles,
		files: []fileRef{{id: "0123456789abcdef", name: "a.png", contentType: "image/png", size: 9}}}))
	f.Fuzz(func(t *testing.T, v []byte) {
		rec, err := decodeEventRecord([]byte("k"), v)
		if err != nil {
			return
		}
		again, err := decodeEventRecord([]byte("k"), encodeEvent(rec))
		if err != nil {
			t.Fatalf("re-encoded %+v does not decode: %v", rec, err)
		}
		if !bytes.Equal(encodeEvent(again), encodeEvent(rec)) {
			t.Fatalf("re-encoding is not stable for %+v", rec)
		}
	})
}

// A legacy message changed once is stored in the current layout and keeps
// its sender, recipients and text.
func TestEncodeEvent_Legacy(t *testing.T) {
	legacy := append([]byte{evWhisper, 2}, "\x01a\x01\x01bpsst"...)
	rec, err := decodeEventRecord([]byte("k"), legacy)
	if err != nil {
		t.Fatal(err)
	}
	rec.reactions = []reactionRec{{emoji: "👍", users: []string{"b"}}}
	got, err := decodeEventRecord([]byte("k"), encodeEvent(rec))
	if err != nil || got.kind != evPost || got.sender != "a" || len(got.to) != 1 || got.text != "psst" || len(got.reactions) != 1 {
		t.Fatalf("re-stored legacy whisper = %+v, %v", got, err)
	}
}
