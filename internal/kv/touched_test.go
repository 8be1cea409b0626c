package kv

import "testing"

func TestTouchedKey(t *testing.T) {
	cases := []struct {
		name string
		cmd  []byte
		ok   bool
	}{
		{"put", EncodePut(Put{Key: "k", Value: []byte("v")}), true},
		{"cas put", EncodePut(Put{Key: "k", Value: []byte("v"), IfVersion: 300}), true},
		{"delete", EncodeDelete(Delete{Key: "k"}), true},
		{"txn", EncodeTxn(Txn{Success: []Op{{Type: OpPut, Key: "k"}}}), true},
		{"expire", EncodeExpire(Expire{}), true},
		{"revoke", EncodeRevoke(Revoke{Lease: 1 << LeaseShift}), true},
		{"grant writes no key", EncodeGrant(Grant{TTLMs: 1000}), false},
		{"keep-alive writes no key", EncodeKeepAlive(KeepAlive{Lease: 1}), false},
		{"other domain", []byte{'C', opPut, 0, 1, 'k'}, false},
		{"unknown op", []byte{Tag, 'Z', 0, 1, 'k'}, false},
		{"short", []byte{Tag, opPut}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if name, ok := TouchedKey(tc.cmd); name != WatchName || ok != tc.ok {
				t.Fatalf("TouchedKey = %q, %v; want %q, %v", name, ok, WatchName, tc.ok)
			}
		})
	}
}

// TouchedKey never panics, and every command that decodes and can write
// keys is reported.
func FuzzTouchedKey(f *testing.F) {
	f.Add(EncodePut(Put{Key: "k", Value: []byte("v"), IfVersion: 2}))
	f.Add(EncodeDelete(Delete{Key: "k"}))
	f.Add([]byte{Tag, opPut, flagIfVersion, 0xff})
	f.Fuzz(func(t *testing.T, cmd []byte) {
		_, ok := TouchedKey(cmd)
		c, err := DecodeCommand(cmd)
		if err != nil {
			return
		}
		switch c.(type) {
		case Put, Delete, Txn, Expire, Revoke:
			if !ok {
				t.Fatalf("TouchedKey missed a %T", c)
			}
		default:
			if ok {
				t.Fatalf("TouchedKey reported a %T", c)
			}
		}
	})
}
