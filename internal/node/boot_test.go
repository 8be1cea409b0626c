package node

import (
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/storage"
	"github.com/parley-chat/parley/internal/transport"
)

// The guard lets a peer's starts count up, refuses one that repeats a
// generation with another boot id or goes back to an older one, remembers
// across its own restarts, and starts over for a new data directory of the
// same node (another incarnation).
func TestBootGuard_RefusesADataDirThatWentBackInTime(t *testing.T) {
	dir := t.TempDir()
	db, err := storage.Open(dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := &bootGuard{db: db}
	first := transport.Boot{Incarnation: "i1", Generation: 3, ID: "a"}
	for _, b := range []transport.Boot{first, first, {Incarnation: "i1", Generation: 4, ID: "b"}} {
		if err := g.check("n2", b); err != nil {
			t.Fatalf("%+v refused: %v", b, err)
		}
	}
	for _, b := range []transport.Boot{
		{Incarnation: "i1", Generation: 4, ID: "c"}, // a copy of the data dir started again
		{Incarnation: "i1", Generation: 3, ID: "a"}, // an older start
	} {
		err := g.check("n2", b)
		if err == nil || !strings.Contains(err.Error(), "old copy of its data directory") || !strings.Contains(err.Error(), "parley cluster remove n2") {
			t.Fatalf("%+v: %v, want a refusal that says what happened and what to do", b, err)
		}
	}
	if err := g.check("n3", transport.Boot{Incarnation: "j", Generation: 1, ID: "x"}); err != nil {
		t.Fatalf("another node refused: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = storage.Open(dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	g = &bootGuard{db: db}
	if err := g.check("n2", transport.Boot{Incarnation: "i1", Generation: 4, ID: "c"}); err == nil {
		t.Fatal("after a restart of the guard's node, the stale boot was accepted")
	}
	if err := g.check("n2", transport.Boot{Incarnation: "i2", Generation: 1, ID: "d"}); err != nil {
		t.Fatalf("a new data directory of n2 refused: %v", err)
	}
}
