package partition

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"maps"
	"reflect"
	"testing"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
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
		"unknown field": binary.AppendUvarint([]byte{replyTag}, 1<<replyFields),
		"long length":   {replyTag, replyResult, 9, 'a'},
		"untagged":      good[1:],
		"JSON":          []byte(`{"code":"unavailable","msg":"node starting"}`),
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

// Forwarded proposals and remote reads use the binary calls once the
// cluster speaks their protocol, JSON before; a binary call the replica's
// node does not know, or answers in JSON while it starts (a build rolled
// back before gossip says so), is sent again in JSON, a command is applied
// once, and a read of several calls holds one snapshot whichever encoding
// it used.
func TestRouter_ForwardingEncoding(t *testing.T) {
	for _, tc := range []struct {
		name              string
		protocol          int
		unknown, starting bool
		// calls made by one proposal and one read of two gets
		want map[string]int
	}{
		{"protocol 2", 2, false, false, map[string]int{MethodProposeBin: 1, MethodGetBin: 2, MethodRelease: 1}},
		{"protocol 1", 1, false, false, map[string]int{MethodPropose: 1, MethodGet: 2, MethodRelease: 1}},
		{"refused binary", 2, true, false, map[string]int{MethodProposeBin: 1, MethodPropose: 1, MethodGetBin: 1, MethodGet: 2, MethodRelease: 1}},
		{"old node starting", 2, false, true, map[string]int{MethodProposeBin: 1, MethodPropose: 1, MethodGetBin: 1, MethodGet: 2, MethodRelease: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lb := &loopback{calls: map[string]int{},
				unknown:  map[string]bool{MethodProposeBin: tc.unknown, MethodGetBin: tc.unknown},
				starting: map[string]bool{MethodProposeBin: tc.starting, MethodGetBin: tc.starting}}
			n1 := newTestNode(t, "n1", true, lb)
			lb.server = n1.server
			n2 := newTestNode(t, "n2", false, lb)
			d := n2.deps
			d.ClusterProtocol = func() int { return tc.protocol }
			r := NewRouter(d)
			ctx := context.Background()
			res, err := r.Propose(ctx, 1, "", []byte{1})
			if err != nil {
				t.Fatal(err)
			}
			if n := binary.BigEndian.Uint64(res); n != 1 {
				t.Errorf("counter after one forwarded proposal = %d, want 1", n)
			}
			var a, b uint64
			if _, err := r.Read(ctx, 1, false, func(s state.Reader) (err error) {
				a, b, err = readPair(s)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if a != 1 || b != 1 {
				t.Errorf("remote read of the pair = %d, %d; want 1, 1", a, b)
			}
			if !maps.Equal(lb.calls, tc.want) {
				t.Errorf("calls %v, want %v", lb.calls, tc.want)
			}
		})
	}
}

// A read request survives the binary encoding, every field alone and all
// together; malformed ones are refused.
func TestReadRequest_BinaryRoundTrip(t *testing.T) {
	for _, want := range []ReadRequest{
		{},
		{Group: 3, Linearizable: true, Key: []byte("k"), Hi: []byte("z"), Limit: 512, Session: 9, Hold: true, Same: true, At: 1 << 33},
		{Group: 1, Key: []byte("only")},
		{Group: 1, Hold: true, Same: true, At: 7},
		{Group: 1, Session: 5, Limit: 1},
	} {
		got, err := DecodeReadRequest(AppendReadRequest(nil, want))
		if err != nil {
			t.Fatalf("%+v: %v", want, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round trip: got %+v, want %+v", got, want)
		}
	}
	good := AppendReadRequest(nil, ReadRequest{Group: 1, Key: []byte("k")})
	for name, b := range map[string][]byte{
		"empty":         nil,
		"truncated":     good[:len(good)-1],
		"trailing":      append(bytes.Clone(good), 0),
		"unknown field": binary.AppendUvarint([]byte{1}, 1<<readFields),
		"huge limit":    binary.AppendUvarint([]byte{1, readLimit}, 1<<40),
	} {
		if req, err := DecodeReadRequest(b); err == nil {
			t.Errorf("%s (%x): decoded %+v", name, b, req)
		}
	}
}

// A forwarded proposal's and a remote get's request and reply in each
// encoding: the binary ones are what a put forwarded to its leader, or a
// read of a replica on another node, costs on both nodes once the cluster
// speaks BinaryProtocol.
func BenchmarkCall(b *testing.B) {
	propose := ProposeRequest{Group: 7, ID: bytes.Repeat([]byte{1}, 16), Cmd: bytes.Repeat([]byte{'v'}, 300)}
	proposed := Reply{Result: bytes.Repeat([]byte{'r'}, 40)}
	get := ReadRequest{Group: 7, Linearizable: true, Key: []byte("kv/d/some-key")}
	got := Reply{Result: bytes.Repeat([]byte{'v'}, 300), Applied: 123456}
	for _, tc := range []struct {
		name string
		run  func()
	}{
		{"propose/json", func() {
			body, _ := json.Marshal(propose)
			var req ProposeRequest
			_ = json.Unmarshal(body, &req)
			out, _ := json.Marshal(proposed)
			var rep Reply
			_ = json.Unmarshal(out, &rep)
		}},
		{"propose/binary", func() {
			_, _ = DecodeProposeRequest(AppendProposeRequest(nil, propose))
			var rep Reply
			_ = DecodeReply(AppendReply(nil, proposed), &rep)
		}},
		{"get/json", func() {
			body, _ := json.Marshal(get)
			var req ReadRequest
			_ = json.Unmarshal(body, &req)
			out, _ := json.Marshal(got)
			var rep Reply
			_ = json.Unmarshal(out, &rep)
		}},
		{"get/binary", func() {
			_, _ = DecodeReadRequest(AppendReadRequest(nil, get))
			var rep Reply
			_ = DecodeReply(AppendReply(nil, got), &rep)
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tc.run()
			}
		})
	}
}
