package chat

import (
	"bytes"
	"reflect"
	"testing"
)

func TestEncode_DecodeHookCommands(t *testing.T) {
	h := [HookSecretHashLen]byte{1, 2, 3, 31: 9}
	cases := []Command{
		CreateHook{Room: "r", User: "alice", ID: "0123456789abcdef", Name: "Deploy Bot", SecretHash: h},
		CreateHook{Room: "r", User: "root", Admin: true, ID: "0123456789abcdef", Name: "x", SecretHash: h},
		RevokeHook{Room: "r", User: "alice", ID: "0123456789abcdef"},
		RevokeHook{Room: "r", User: "root", Admin: true, ID: "0123456789abcdef"},
		HookPost{Room: "r", ID: "0123456789abcdef", SecretHash: h, Text: "deployed\n"},
		HookPost{Room: "r", ID: "0123456789abcdef", SecretHash: h, Name: "ci", Text: "ok"},
	}
	for _, c := range cases {
		enc := encode(t, c)
		got, err := DecodeCommand(enc)
		if err != nil || !reflect.DeepEqual(got, c) {
			t.Fatalf("round trip of %#v = %#v, %v", c, got, err)
		}
		if !bytes.Equal(encode(t, got), enc) {
			t.Fatalf("%#v does not re-encode alike", c)
		}
	}
	short := append([]byte{Tag, opHookPost, 1, 'r', 1, 'i', 3}, "abc"...)
	if c, err := DecodeCommand(short); err == nil {
		t.Fatalf("a 3-byte secret hash decoded: %#v", c)
	}
}
