//go:build failpoints

package clock

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWallClock_AddsTheFailpointOffset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "offset")
	t.Setenv(OffsetFileEnv, path)
	if err := os.WriteFile(path, []byte("-5m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * offsetReread) // a reading cached by an earlier call goes stale
	if d := time.Since(wallClock()); d < 5*time.Minute-time.Second || d > 5*time.Minute+time.Second {
		t.Fatalf("the wall clock is %v behind, want 5m", d)
	}
}
