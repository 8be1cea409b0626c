package client_test

import (
	"encoding/json"
	"testing"

	"github.com/parley-chat/parley/client"
)

func TestChecksum_UnmarshalJSON(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		bad      bool
	}{
		{in: `"9f2c01"`, want: "9f2c01"},
		{in: `18446744073709551615`, want: "18446744073709551615"},
		{in: `0`, want: "0"},
		{in: `true`, bad: true},
		{in: `{}`, bad: true},
	} {
		var r client.ReplicaCheck
		err := json.Unmarshal([]byte(`{"node":"n1","checksum":`+tc.in+`}`), &r)
		if tc.bad != (err != nil) || (!tc.bad && string(r.Checksum) != tc.want) {
			t.Errorf("checksum %s = %q, %v; want %q (error: %v)", tc.in, r.Checksum, err, tc.want, tc.bad)
		}
	}
}
