package chat

import (
	"reflect"
	"testing"

	"github.com/parley-chat/parley/internal/errs"
)

func TestDecodeResult(t *testing.T) {
	rec := &roomRecord{owner: "alice", private: true, passwordHash: "h", maxMembers: 30, members: 2, createdAt: 5, lastSeq: 9, lastTs: 7, firstRetained: 3}
	room := rec.view("general")
	cases := []struct {
		name     string
		in       []byte
		want     Result
		wantCode errs.Code
	}{
		{"post", encodeOK(okResult{seq: 4, ts: 1700000000000, user: "Bob"}), Result{Seq: 4, Ts: 1700000000000, User: "Bob"}, ""},
		{"negative ts", encodeOK(okResult{ts: -5}), Result{Ts: -5}, ""},
		{"room", encodeOK(okResult{seq: 9, user: "alice", room: "general", rec: rec}), Result{Seq: 9, User: "alice", Room: &room}, ""},
		{"compact", encodeOK(okResult{n: 12, more: true}), Result{N: 12, More: true}, ""},
		{"invalid", refuse(statusInvalid, "bad"), Result{}, errs.Invalid},
		{"not found", refuse(statusNotFound, "no room"), Result{}, errs.NotFound},
		{"forbidden", refuse(statusForbidden, "no"), Result{}, errs.Forbidden},
		{"conflict", refuse(statusConflict, "full"), Result{}, errs.Conflict},
		{"empty", nil, Result{}, errs.Internal},
		{"unknown status", []byte{9, 'x'}, Result{}, errs.Internal},
		{"unknown flag", []byte{statusOK, opPost, 0x80, 0, 0, 0, 0}, Result{}, errs.Internal},
		{"truncated", []byte{statusOK, 0, 0x80}, Result{}, errs.Internal},
		{"trailing", append(encodeOK(okResult{}), 1), Result{}, errs.Internal},
		{"bad room record", []byte{statusOK, opJoin, resRoom, 0, 0, 0, 0, 1, 'r', 9}, Result{}, errs.Internal},
		{"op", encodeOK(okResult{op: opPost, seq: 1}), Result{Seq: 1, op: opPost}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeResult(tc.in)
			wantCode(t, err, tc.wantCode)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("DecodeResult = %+v, want %+v", got, tc.want)
			}
		})
	}
	t.Run("refusal message", func(t *testing.T) {
		_, err := DecodeResult(refuse(statusConflict, "room %q is full", "r"))
		var e *errs.Error
		if !errorsAs(err, &e) || e.Message != `room "r" is full` {
			t.Fatalf("error = %#v", err)
		}
	})
}

func FuzzDecodeResult(f *testing.F) {
	f.Add(encodeOK(okResult{seq: 1, ts: 2, user: "u", n: 3}))
	f.Add(encodeOK(okResult{room: "r", rec: &roomRecord{owner: "a", maxMembers: 1, firstRetained: 1}}))
	f.Add(encodeOK(okResult{room: "r", rec: &roomRecord{owner: "a", maxMembers: 1, lastSeq: 5, firstRetained: 2,
		settings: roomSettings{legalHold: true, retention: roomRetention{days: -1, messages: 3, countedTo: 4, counted: 1}}}}))
	f.Add(refuse(statusForbidden, "no"))
	f.Fuzz(func(t *testing.T, in []byte) {
		_, _ = DecodeResult(in)
	})
}
