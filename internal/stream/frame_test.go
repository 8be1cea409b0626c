package stream

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
)

func TestEncode(t *testing.T) {
	cases := []struct {
		name string
		got  []byte
		want string
	}{
		{"event", EncodeEvent(chat.Event{Room: "r", Seq: 7, Ts: 9, Kind: chat.KindWhisper, Sender: "a", Text: "hi", To: []string{"b"}}),
			`{"type":"event","room":"r","seq":7,"ts":9,"kind":"whisper","sender":"a","text":"hi","to":["b"]}`},
		{"hidden", EncodeEvent(chat.Event{Room: "r", Seq: 8, Ts: 9, Kind: chat.KindHidden}), `{"type":"event","room":"r","seq":8,"ts":9,"kind":"hidden"}`},
		{"ready", EncodeReady("r", 12), `{"type":"ready","room":"r","seq":12}`},
		{"error", EncodeError("r", CodeHistoryCompacted, "gone"), `{"type":"error","room":"r","code":"history_compacted","message":"gone"}`},
		{"presence", EncodePresence("r", "bob", true), `{"type":"presence","room":"r","username":"bob","online":true}`},
		{"error of errs", ErrorFrameFor("r", errs.New(errs.Forbidden, "private")), `{"type":"error","room":"r","code":"forbidden","message":"private"}`},
		{"unexpected error", ErrorFrameFor("r", errors.New("disk on fire")), `{"type":"error","room":"r","code":"unavailable","message":"the room cannot be read right now; subscribe again"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if string(tc.got) != tc.want {
				t.Fatalf("got  %s\nwant %s", tc.got, tc.want)
			}
		})
	}
}

func TestDecodeClientFrame(t *testing.T) {
	seven := uint64(7)
	cases := []struct {
		in   string
		want ClientFrame
		err  bool
	}{
		{`{"type":"subscribe","room":"r","after":7}`, ClientFrame{Type: TypeSubscribe, Room: "r", After: &seven}, false},
		{`{"type":"subscribe","room":"r"}`, ClientFrame{Type: TypeSubscribe, Room: "r"}, false},
		{`{"type":"unsubscribe","room":"r"}`, ClientFrame{Type: TypeUnsubscribe, Room: "r"}, false},
		{`{"type":"auth","token":"t"}`, ClientFrame{Type: TypeAuth, Token: "t"}, false},
		{`{"type":"subscribe"}`, ClientFrame{}, true},
		{`{"type":"auth"}`, ClientFrame{}, true},
		{`{"type":"subscribe","room":"r","after":-1}`, ClientFrame{}, true},
		{`{"type":"subscribe","room":"r","after":"7"}`, ClientFrame{}, true},
		{`{"room":"r"}`, ClientFrame{}, true},
		{`{"type":"dance"}`, ClientFrame{}, true},
		{`[]`, ClientFrame{}, true},
		{`{"type":"subscribe","room":"` + strings.Repeat("r", MaxClientFrame) + `"}`, ClientFrame{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.in[:min(len(tc.in), 50)], func(t *testing.T) {
			got, err := DecodeClientFrame([]byte(tc.in))
			if tc.err {
				if !errs.Is(err, errs.Invalid) {
					t.Fatalf("error %v, want invalid", err)
				}
				return
			}
			if err != nil || got.Type != tc.want.Type || got.Room != tc.want.Room || got.Token != tc.want.Token ||
				(got.After == nil) != (tc.want.After == nil) || (got.After != nil && *got.After != *tc.want.After) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func FuzzDecodeClientFrame(f *testing.F) {
	for _, s := range []string{`{"type":"subscribe","room":"r","after":7}`, `{"type":"auth","token":"t"}`, `{"type":"unsubscribe","room":"r"}`, `{`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := DecodeClientFrame(b)
		if err != nil {
			if !errs.Is(err, errs.Invalid) {
				t.Fatalf("error %v is not invalid", err)
			}
			return
		}
		switch fr.Type {
		case TypeSubscribe, TypeUnsubscribe:
			if fr.Room == "" {
				t.Fatal("accepted a subscription without a room")
			}
		case TypeAuth:
			if fr.Token == "" {
				t.Fatal("accepted an auth frame without a token")
			}
		default:
			t.Fatalf("accepted type %q", fr.Type)
		}
		if _, err := json.Marshal(fr); err != nil {
			t.Fatal(err)
		}
	})
}
