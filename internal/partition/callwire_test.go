package partition

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/parley-chat/parley/internal/errs"
)

// Every field of a Reply survives the binary encoding, alone and together,
// and an empty result stays a result.
func TestReply_BinaryRoundTrip(t *testing.T) {
	full := Reply{Result: []byte("res"), Code: errs.Conflict, Message: "m", NotLeader: true, Leader: 3,
		Engine: engineMoved, StaleMs: -7, Applied: 1 << 40, Session: 99}
	cases := []Reply{{}, full, {Result: []byte{}}, {Result: []byte("x")}, {Code: errs.Invalid, Message: "bad"},
		{NotLeader: true}, {NotLeader: true, Leader: 2, Code: errs.Unavailable, Message: "not the leader"},
		{Engine: engineNoReplica}, {StaleMs: 1500}, {Applied: 5, Session: 6}}
	for _, want := range cases {
		b := AppendReply(nil, want)
		var got Reply
		if err := DecodeReply(b, &got); err != nil {
			t.Fatalf("decode %+v: %v", want, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round trip: got %+v, want %+v", got, want)
		}
		if got.Err(1) == nil != (want.Err(1) == nil) {
			t.Errorf("%+v: error %v after the round trip, %v before", want, got.Err(1), want.Err(1))
		}
	}
}

// Truncated, padded and unknown-field replies are refused, never misread.
func TestReply_BinaryRefusesMalformed(t *testing.T) {
	good := AppendReply(nil, Reply{Result: []byte("abc"), Leader: 2})
	var r Reply
	for name, b := range map[string][]byte{
		"empty":         nil,
		"truncated":     good[:len(good)-1],
		"trailing":      append(bytes.Clone(good), 0),
		"unknown field": binary.AppendUvarint(nil, 1<<replyFields),
		"long length":   {replyResult, 9, 'a'},
	} {
		if err := DecodeReply(b, &r); err == nil {
			t.Errorf("%s (%x): decoded %+v", name, b, r)
		}
	}
}

// A propose request survives the binary encoding; an empty command stays
// empty.
func TestProposeRequest_BinaryRoundTrip(t *testing.T) {
	for _, want := range []ProposeRequest{
		{Group: 1, ID: []byte("0123456789abcdef"), Cmd: []byte("command")},
		{Group: 1 << 50, ID: []byte("c" + "user" + "key")},
		{},
	} {
		got, err := DecodeProposeRequest(AppendProposeRequest(nil, want))
		if err != nil {
			t.Fatalf("%+v: %v", want, err)
		}
		if got.Group != want.Group || !bytes.Equal(got.ID, want.ID) || !bytes.Equal(got.Cmd, want.Cmd) {
			t.Errorf("round trip: got %+v, want %+v", got, want)
		}
	}
	if _, err := DecodeProposeRequest([]byte{1, 5, 'a'}); err == nil {
		t.Error("an id longer than the body decoded")
	}
}

// Forwarded proposals use the binary call once the cluster speaks its
// protocol, JSON before; a binary call the leader's node does not know (a
// build rolled back before gossip says so) is sent again in JSON, and the
// command is applied once.
func TestRouter_Propose_ForwardingEncoding(t *testing.T) {
	for _, tc := range []struct {
		name          string
		protocol      int
		unknown       bool
		bin, jsonCall int
	}{
		{"protocol 2", 2, false, 1, 0},
		{"protocol 1", 1, false, 0, 1},
		{"refused binary", 2, true, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lb := &loopback{calls: map[string]int{}, unknown: map[string]bool{MethodProposeBin: tc.unknown}}
			n1 := newTestNode(t, "n1", true, lb)
			lb.server = n1.server
			n2 := newTestNode(t, "n2", false, lb)
			d := n2.deps
			d.ClusterProtocol = func() int { return tc.protocol }
			r := NewRouter(d)
			res, err := r.Propose(context.Background(), 1, "", []byte{1})
			if err != nil {
				t.Fatal(err)
			}
			if n := binary.BigEndian.Uint64(res); n != 1 {
				t.Errorf("counter after one forwarded proposal = %d, want 1", n)
			}
			if lb.calls[MethodProposeBin] != tc.bin || lb.calls[MethodPropose] != tc.jsonCall {
				t.Errorf("calls %v, want %d binary and %d JSON", lb.calls, tc.bin, tc.jsonCall)
			}
		})
	}
}

// A forwarded proposal's request and reply in each encoding: the binary one
// is what a put forwarded to its leader costs on both nodes once the
// cluster speaks BinaryProtocol.
func BenchmarkProposeCall(b *testing.B) {
	req := ProposeRequest{Group: 7, ID: bytes.Repeat([]byte{1}, 16), Cmd: bytes.Repeat([]byte{'v'}, 300)}
	res := Reply{Result: bytes.Repeat([]byte{'r'}, 40)}
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			body, _ := json.Marshal(req)
			var got ProposeRequest
			_ = json.Unmarshal(body, &got)
			out, _ := json.Marshal(res)
			var rep Reply
			_ = json.Unmarshal(out, &rep)
		}
	})
	b.Run("binary", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			got, _ := DecodeProposeRequest(AppendProposeRequest(nil, req))
			_ = got
			var rep Reply
			_ = DecodeReply(AppendReply(nil, res), &rep)
		}
	})
}
