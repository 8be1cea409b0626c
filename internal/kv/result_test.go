package kv

import (
	"testing"

	"github.com/parley-chat/parley/internal/errs"
)

func TestDecodeResult(t *testing.T) {
	cases := []struct {
		name        string
		in          []byte
		wantVersion uint64
		wantCode    errs.Code
	}{
		{"ok", encodeResult(statusOK, 3), 3, ""},
		{"not found", encodeResult(statusNotFound, 0), 0, errs.NotFound},
		{"precondition", encodeResult(statusPreconditionFailed, 9), 9, errs.PreconditionFailed},
		{"precondition missing", encodeResult(statusPreconditionFailed, 0), 0, errs.PreconditionFailed},
		{"invalid", invalidResult(errMalformed), 0, errs.Invalid},
		{"empty", nil, 0, errs.Internal},
		{"unknown status", encodeResult(9, 1), 0, errs.Internal},
		{"truncated", []byte{statusOK, 0x80}, 0, errs.Internal},
		{"with revision", writeResult(3, 17), 3, ""},
		{"trailing", []byte{statusOK, 1, 2, 3}, 0, errs.Internal},
		{"lease gone", leaseGone(5), 0, errs.NotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := DecodeResult(tc.in)
			if got := errs.CodeOf(err); got != tc.wantCode {
				t.Fatalf("code = %q (%v), want %q", got, err, tc.wantCode)
			}
			if v != tc.wantVersion {
				t.Fatalf("version = %d, want %d", v, tc.wantVersion)
			}
		})
	}
}

func FuzzDecodeResult(f *testing.F) {
	f.Add(encodeResult(statusOK, 1))
	f.Add(encodeResult(statusPreconditionFailed, 1<<50))
	f.Add(invalidResult(errMalformed))
	f.Fuzz(func(t *testing.T, in []byte) {
		_, _ = DecodeResult(in)
	})
}
