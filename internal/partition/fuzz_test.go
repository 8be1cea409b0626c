package partition

import (
	"bytes"
	"testing"
)

// A forwarded scan page decodes without panicking, and an accepted page
// survives an encode-decode round trip (lengths may arrive as non-minimal
// varints, so the bytes themselves need not match).
func FuzzDecodePairs(f *testing.F) {
	f.Add(encodePairs([][2][]byte{{[]byte("k1"), []byte("v1")}, {[]byte(""), []byte("v")}}))
	f.Add([]byte{0x05, 'a'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		pairs, err := decodePairs(b)
		if err != nil {
			return
		}
		again, err := decodePairs(encodePairs(pairs))
		if err != nil || len(again) != len(pairs) {
			t.Fatalf("round trip of %q: %q, %v", pairs, again, err)
		}
		for i := range pairs {
			if !bytes.Equal(again[i][0], pairs[i][0]) || !bytes.Equal(again[i][1], pairs[i][1]) {
				t.Fatalf("pair %d: %q became %q", i, pairs[i], again[i])
			}
		}
	})
}

// A binary reply decodes without panicking, and an accepted one survives an
// encode-decode round trip.
func FuzzDecodeReply(f *testing.F) {
	f.Add(AppendReply(nil, Reply{Result: []byte("r"), Code: "invalid", Message: "m", NotLeader: true, Leader: 2, Engine: "moved", StaleMs: -1, Applied: 3, Session: 4}))
	f.Add([]byte{replyTag, 0x01, 0x05, 'a'})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Reply
		if DecodeReply(b, &r) != nil {
			return
		}
		var again Reply
		if err := DecodeReply(AppendReply(nil, r), &again); err != nil || !replyEqual(r, again) {
			t.Fatalf("round trip of %+v: %+v, %v", r, again, err)
		}
	})
}

// A binary propose request decodes without panicking, and an accepted one
// survives an encode-decode round trip.
func FuzzDecodeProposeRequest(f *testing.F) {
	f.Add(AppendProposeRequest(nil, ProposeRequest{Group: 3, ID: []byte("id"), Cmd: []byte("cmd")}))
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := DecodeProposeRequest(b)
		if err != nil {
			return
		}
		again, err := DecodeProposeRequest(AppendProposeRequest(nil, req))
		if err != nil || again.Group != req.Group || !bytes.Equal(again.ID, req.ID) || !bytes.Equal(again.Cmd, req.Cmd) {
			t.Fatalf("round trip of %+v: %+v, %v", req, again, err)
		}
	})
}

// replyEqual compares replies field by field, an empty string field equal
// to an absent one (the decoder reads a present empty string as "").
func replyEqual(a, b Reply) bool {
	return bytes.Equal(a.Result, b.Result) && (a.Result == nil) == (b.Result == nil) &&
		a.Code == b.Code && a.Message == b.Message && a.NotLeader == b.NotLeader && a.Leader == b.Leader &&
		a.Engine == b.Engine && a.StaleMs == b.StaleMs && a.Applied == b.Applied && a.Session == b.Session
}

// A binary read request decodes without panicking, and an accepted one
// survives an encode-decode round trip.
func FuzzDecodeReadRequest(f *testing.F) {
	f.Add(AppendReadRequest(nil, ReadRequest{Group: 2, Linearizable: true, Key: []byte("k"), Hi: []byte("z"), Limit: 3, Session: 4, Hold: true, Same: true, At: 5}))
	f.Add([]byte{0x01, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := DecodeReadRequest(b)
		if err != nil {
			return
		}
		again, err := DecodeReadRequest(AppendReadRequest(nil, req))
		if err != nil || again.Group != req.Group || again.Linearizable != req.Linearizable || !bytes.Equal(again.Key, req.Key) ||
			!bytes.Equal(again.Hi, req.Hi) || again.Limit != req.Limit || again.Session != req.Session ||
			again.Hold != req.Hold || again.Same != req.Same || again.At != req.At {
			t.Fatalf("round trip of %+v: %+v, %v", req, again, err)
		}
	})
}
