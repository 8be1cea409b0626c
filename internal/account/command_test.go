package account

import (
	"bytes"
	"reflect"
	"testing"
)

func digestOf(b byte) [TokenHashLen]byte {
	var d [TokenHashLen]byte
	for i := range d {
		d[i] = b + byte(i)
	}
	return d
}

func encode(t testing.TB, c Command) []byte {
	t.Helper()
	switch c := c.(type) {
	case CreateUser:
		return EncodeCreateUser(c)
	case ClaimAdmin:
		return EncodeClaimAdmin(c)
	case CreateSession:
		return EncodeCreateSession(c)
	case DeleteSession:
		return EncodeDeleteSession(c)
	}
	t.Fatalf("unexpected command %T", c)
	return nil
}

func TestEncode_DecodeCommand(t *testing.T) {
	cases := []struct {
		name string
		cmd  Command
	}{
		{"create user", CreateUser{Username: "Alice", PasswordHash: "$argon2id$x"}},
		{"create admin", CreateUser{Username: "a", PasswordHash: "h", Admin: true}},
		{"claim", ClaimAdmin{Username: "alice"}},
		{"session", CreateSession{Username: "alice", TokenHash: digestOf(1), TTLMs: 7 * 24 * 3600 * 1000}},
		{"session ttl 1", CreateSession{Username: "b", TokenHash: digestOf(9), TTLMs: 1}},
		{"delete session", DeleteSession{TokenHash: digestOf(3)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			enc := encode(t, tc.cmd)
			if enc[0] != Tag {
				t.Fatalf("first byte = %q, want %q", enc[0], Tag)
			}
			got, err := DecodeCommand(enc)
			if err != nil {
				t.Fatalf("DecodeCommand: %v", err)
			}
			if !reflect.DeepEqual(got, tc.cmd) {
				t.Fatalf("round trip = %#v, want %#v", got, tc.cmd)
			}
		})
	}
}

func TestDecodeCommand_Errors(t *testing.T) {
	d := digestOf(0)
	cases := []struct {
		name string
		in   []byte
	}{
		{"nil", nil},
		{"tag only", []byte{Tag}},
		{"wrong tag", []byte{'K', opClaimAdmin, 'a'}},
		{"unknown op", []byte{Tag, 'Z', 'a'}},
		{"user no flags", []byte{Tag, opCreateUser}},
		{"user unknown flag", []byte{Tag, opCreateUser, 2, 1, 'a', 'h'}},
		{"user empty name", []byte{Tag, opCreateUser, 0, 0, 'h'}},
		{"user name too long", []byte{Tag, opCreateUser, 0, 5, 'a'}},
		{"user empty hash", []byte{Tag, opCreateUser, 0, 1, 'a'}},
		{"user non-minimal varint", []byte{Tag, opCreateUser, 0, 0x81, 0x00, 'a', 'h'}},
		{"claim empty", []byte{Tag, opClaimAdmin}},
		{"session short hash", append([]byte{Tag, opCreateSession}, d[:31]...)},
		{"session no ttl", append([]byte{Tag, opCreateSession}, d[:]...)},
		{"session zero ttl", append(append([]byte{Tag, opCreateSession}, d[:]...), 0, 'a')},
		{"session no name", append(append([]byte{Tag, opCreateSession}, d[:]...), 5)},
		{"delete short", append([]byte{Tag, opDeleteSession}, d[:31]...)},
		{"delete trailing", append(append([]byte{Tag, opDeleteSession}, d[:]...), 'x')},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if c, err := DecodeCommand(tc.in); err == nil {
				t.Fatalf("DecodeCommand(% x) = %#v, want error", tc.in, c)
			}
		})
	}
}

func FuzzDecodeCommand(f *testing.F) {
	f.Add(EncodeCreateUser(CreateUser{Username: "Alice", PasswordHash: "h", Admin: true}))
	f.Add(EncodeClaimAdmin(ClaimAdmin{Username: "alice"}))
	f.Add(EncodeCreateSession(CreateSession{Username: "alice", TokenHash: digestOf(1), TTLMs: 300}))
	f.Add(EncodeDeleteSession(DeleteSession{TokenHash: digestOf(2)}))
	f.Add([]byte{Tag, opCreateUser, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := DecodeCommand(in)
		if err != nil {
			return
		}
		// Only canonical encodings decode, so they re-encode to the input.
		if enc := encode(t, c); !bytes.Equal(enc, in) {
			t.Fatalf("re-encoding % x gives % x", in, enc)
		}
	})
}

// FuzzDecodeResult feeds arbitrary bytes to every result decoder: they may
// refuse but never panic.
func FuzzDecodeResult(f *testing.F) {
	f.Add(userResult(userRecord{name: "Alice", admin: true, createdMs: 5}))
	f.Add(claimResult("alice"))
	f.Add(sessionResult(userRecord{name: "Alice"}, 99))
	f.Add([]byte{statusNotFound})
	f.Add([]byte{statusInvalid, 'x'})
	f.Fuzz(func(t *testing.T, in []byte) {
		_, _ = decodeUserResult(in)
		_, _ = decodeClaimResult(in)
		_, _, _, _ = decodeSessionResult(in)
		_ = decodeDeleteResult(in)
	})
}

// FuzzDecodeRecord feeds arbitrary bytes to the stored-record decoders; a
// record that decodes re-encodes to the same bytes.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(encodeUser(userRecord{name: "Alice", admin: true, createdMs: 7, passwordHash: "h"}))
	f.Add(encodeSession(sessionRecord{username: "alice", expiresMs: 9, createdMs: 1}))
	f.Fuzz(func(t *testing.T, in []byte) {
		if u, err := decodeUser(in); err == nil && !bytes.Equal(encodeUser(u), in) {
			t.Fatalf("user % x re-encodes to % x", in, encodeUser(u))
		}
		if s, err := decodeSession(in); err == nil && !bytes.Equal(encodeSession(s), in) {
			t.Fatalf("session % x re-encodes to % x", in, encodeSession(s))
		}
	})
}

func BenchmarkDecodeCommand(b *testing.B) {
	cmd := EncodeCreateSession(CreateSession{Username: "alice", TokenHash: digestOf(1), TTLMs: 1 << 30})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeCommand(cmd); err != nil {
			b.Fatal(err)
		}
	}
}
