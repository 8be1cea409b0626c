package wire_test

import (
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/wire"
)

func TestDedupKey(t *testing.T) {
	got := wire.NewDedupKey("idem", 'X', 'o').String("ab").Uvarint(300).Raw("idem").Done()
	if want := "Xo\x02ab\xac\x02idem"; got != want {
		t.Fatalf("key = %q, want %q", got, want)
	}
	if got := wire.NewDedupKey("", 'X').String("ab").Uvarint(1).Raw("").Done(); got != "" {
		t.Fatalf("key without an idempotency key = %q, want empty", got)
	}
	a := wire.NewDedupKey("k", 'X').String("ab").String("c").Done()
	b := wire.NewDedupKey("k", 'X').String("a").String("bc").Done()
	if a == b {
		t.Fatalf("(ab, c) and (a, bc) share the key %q", a)
	}
}

func TestCheckIdempotencyKey(t *testing.T) {
	if err := wire.CheckIdempotencyKey(strings.Repeat("k", wire.MaxIdempotencyKey)); err != nil {
		t.Fatalf("a key of the limit: %v", err)
	}
	err := wire.CheckIdempotencyKey(strings.Repeat("k", wire.MaxIdempotencyKey+1))
	if errs.CodeOf(err) != errs.Invalid || !strings.Contains(err.Error(), "idempotency key") {
		t.Fatalf("a key over the limit: %v", err)
	}
}

func BenchmarkDedupKey_None(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = wire.NewDedupKey("", 'K').String("alice").Raw("").Done()
	}
}
