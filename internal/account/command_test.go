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
	case CreateToken:
		return EncodeCreateToken(c)
	case RevokeToken:
		return EncodeRevokeToken(c)
	case TouchTokens:
		return EncodeTouchTokens(c)
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
		{"create token", CreateToken{Username: "alice", TokenHash: digestOf(4), ID: "0123456789abcdef", Name: "ci bot",
			Scopes: Scopes{{Level: LevelRead}, {Level: LevelWrite, Kind: KindQueue, Name: "jobs"}}, TTLMs: 3600_000}},
		{"revoke token", RevokeToken{Username: "alice", ID: "0123456789abcdef"}},
		{"touch tokens", TouchTokens{Uses: []TokenUse{{TokenHash: digestOf(5), AtMs: 1}, {TokenHash: digestOf(6), AtMs: 1 << 40}}}},
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

// tokenHead is a CreateToken encoding up to its scopes.
func tokenHead(d [TokenHashLen]byte) []byte {
	b := append(append([]byte{Tag, opCreateToken}, d[:]...), 10)
	return append(b, 1, 'a', 2, 'i', 'd', 1, 'n')
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
		{"token no scopes", append(tokenHead(d), 0)},
		{"token bad scope", append(tokenHead(d), 1, 4, 'r', 'o', 'o', 't')},
		{"token scopes out of order", append(tokenHead(d), 2, 5, 'w', 'r', 'i', 't', 'e', 4, 'r', 'e', 'a', 'd')},
		{"token duplicate scopes", append(tokenHead(d), 2, 4, 'r', 'e', 'a', 'd', 4, 'r', 'e', 'a', 'd')},
		{"token trailing", append(tokenHead(d), 1, 4, 'r', 'e', 'a', 'd', 'x')},
		{"revoke no id", []byte{Tag, opRevokeToken, 1, 'a'}},
		{"touch empty", []byte{Tag, opTouchTokens}},
		{"touch short", append([]byte{Tag, opTouchTokens}, d[:31]...)},
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
	f.Add(EncodeCreateToken(CreateToken{Username: "a", TokenHash: digestOf(3), ID: "i", Name: "n", Scopes: Scopes{{Level: LevelRead}}, TTLMs: 1}))
	f.Add(EncodeRevokeToken(RevokeToken{Username: "a", ID: "i"}))
	f.Add(EncodeTouchTokens(TouchTokens{Uses: []TokenUse{{TokenHash: digestOf(4), AtMs: 9}}}))
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
		_, _, _ = decodeTokenResult(in)
		_, _ = decodeRevokeTokenResult(in)
		_ = decodeTouchResult(in)
	})
}

// FuzzDecodeRecord feeds arbitrary bytes to the stored-record decoders; a
// record that decodes re-encodes to the same bytes.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(encodeUser(userRecord{name: "Alice", admin: true, createdMs: 7, passwordHash: "h"}))
	f.Add(encodeSession(sessionRecord{username: "alice", expiresMs: 9, createdMs: 1}))
	f.Add(encodeToken(tokenRecord{username: "alice", id: "i", name: "n", scopes: Scopes{{Level: LevelWrite, Kind: KindRoom, Name: "r"}}, createdMs: 1, expiresMs: 2, lastUsedMs: 3}))
	f.Fuzz(func(t *testing.T, in []byte) {
		if u, err := decodeUser(in); err == nil && !bytes.Equal(encodeUser(u), in) {
			t.Fatalf("user % x re-encodes to % x", in, encodeUser(u))
		}
		if s, err := decodeSession(in); err == nil && !bytes.Equal(encodeSession(s), in) {
			t.Fatalf("session % x re-encodes to % x", in, encodeSession(s))
		}
		if tok, err := decodeToken(in); err == nil && !bytes.Equal(encodeToken(tok), in) {
			t.Fatalf("token % x re-encodes to % x", in, encodeToken(tok))
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
