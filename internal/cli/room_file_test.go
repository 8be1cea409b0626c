package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// parley room upload posts a file that history lists and another member
// downloads byte for byte; a non-member is refused.
func TestRoomFileCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	url, _ := startServe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	olga := cliAs{t, ctx, url, signUpAs(t, url, "olga")}
	bob := cliAs{t, ctx, url, signUpAs(t, url, "bob")}
	nora := cliAs{t, ctx, url, signUpAs(t, url, "nora")}
	olga.ok("room", "create", "docs")
	bob.ok("room", "join", "docs")

	dir := t.TempDir()
	src := filepath.Join(dir, "notes.txt")
	data := bytes.Repeat([]byte("some notes\n"), 70000) // 752 KiB: two chunks
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	got := olga.ok("room", "upload", "docs", src, "--message", "the notes")
	m := regexp.MustCompile(`^posted #\d+ with (docs\.[0-9a-f]{16}) \(notes\.txt, 752\.0 KiB\)\n$`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("upload printed %q", got)
	}
	id := m[1]
	if h := bob.ok("room", "history", "docs"); !strings.Contains(h, "olga: the notes [file "+id+": notes.txt, 752.0 KiB]") {
		t.Errorf("history does not list the file:\n%s", h)
	}
	dest := filepath.Join(dir, "copy.txt")
	bob.ok("room", "download", id, "-o", dest)
	if b, err := os.ReadFile(dest); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("downloaded %d bytes (%v), want the %d uploaded", len(b), err, len(data))
	}
	nora.fails("forbidden", "room", "download", id, "-o", filepath.Join(dir, "nora.txt"))
	nora.fails("forbidden", "room", "upload", "docs", src)
}
