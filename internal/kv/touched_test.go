package kv

import "testing"

func TestTouchedKey(t *testing.T) {
	cases := []struct {
		name string
		cmd  []byte
		key  string
		ok   bool
	}{
		{"put", EncodePut(Put{Key: "k", Value: []byte("v")}), "k", true},
		{"cas put", EncodePut(Put{Key: "k", Value: []byte("v"), IfVersion: 300}), "k", true},
		{"create", EncodePut(Put{Key: "k", IfAbsent: true}), "k", true},
		{"delete", EncodeDelete(Delete{Key: "k"}), "k", true},
		{"cas delete", EncodeDelete(Delete{Key: "k", IfVersion: 7}), "k", true},
		{"other domain", []byte{'C', opPut, 0, 1, 'k'}, "", false},
		{"unknown op", []byte{Tag, 'X', 0, 1, 'k'}, "", false},
		{"malformed", []byte{Tag, opPut, 0, 9, 'k'}, "", false},
		{"bad version", []byte{Tag, opDelete, flagIfVersion, 0x80}, "", false},
		{"short", []byte{Tag, opPut}, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if key, ok := TouchedKey(tc.cmd); key != tc.key || ok != tc.ok {
				t.Fatalf("TouchedKey = %q, %v; want %q, %v", key, ok, tc.key, tc.ok)
			}
		})
	}
}

// TouchedKey never panics, and a command that decodes names the key it
// reports.
func FuzzTouchedKey(f *testing.F) {
	f.Add(EncodePut(Put{Key: "k", Value: []byte("v"), IfVersion: 2}))
	f.Add(EncodeDelete(Delete{Key: "k"}))
	f.Add([]byte{Tag, opPut, flagIfVersion, 0xff})
	f.Fuzz(func(t *testing.T, cmd []byte) {
		key, ok := TouchedKey(cmd)
		c, err := DecodeCommand(cmd)
		if err != nil {
			return
		}
		var want string
		switch c := c.(type) {
		case Put:
			want = c.Key
		case Delete:
			want = c.Key
		}
		if !ok || key != want {
			t.Fatalf("TouchedKey = %q, %v; the command writes %q", key, ok, want)
		}
	})
}
