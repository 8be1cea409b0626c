package chat

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
)

const (
	fileA = "00000000000000aa"
	fileB = "00000000000000bb"
)

// upload stores data as file id of user in room in chunks of chunk bytes
// and finishes it.
func (f *fixture) upload(room, user, id string, data []byte, chunk int) Result {
	f.t.Helper()
	var i uint64
	for off := 0; off < len(data); off += chunk {
		f.ok(EncodeFileChunk(FileChunk{Room: room, User: user, ID: id, Index: i, Quota: 1 << 30, Data: data[off:min(off+chunk, len(data))]}))
		i++
	}
	return f.ok(EncodeFileCommit(FileCommit{Room: room, User: user, ID: id, Size: uint64(len(data)), Chunks: i, Name: "a.png", ContentType: "image/png"}))
}

// storeHolds reports whether any value of the store contains marker.
func storeHolds(t testing.TB, r state.Reader, marker string) bool {
	t.Helper()
	return strings.Contains(dump(t, r), hex.EncodeToString([]byte(marker)))
}

// A file uploaded in chunks and attached to a post is listed with the
// message, and deleting the message removes its bytes, record and usage.
func TestApplyFile_UploadAttachDelete(t *testing.T) {
	f := setup(t)
	data := bytes.Repeat([]byte("MARKER-0123456789"), 10)
	f.upload("pub", "bob", fileA, data, 64)
	if !storeHolds(t, f.w, "MARKER-0123456789") {
		t.Fatal("the chunks are not stored")
	}
	res := f.ok(EncodePost(Post{Room: "pub", User: "bob", Files: []string{fileA}}))
	msg, err := Message(f.w, "pub", "bob", res.Seq)
	if err != nil {
		t.Fatal(err)
	}
	want := FileInfo{ID: "pub." + fileA, Name: "a.png", Size: int64(len(data)), ContentType: "image/png", URL: "/api/v1/files/pub." + fileA}
	if len(msg.Files) != 1 || msg.Files[0] != want {
		t.Fatalf("message files = %+v, want %+v", msg.Files, want)
	}
	// Attached once only.
	_, err = f.apply(EncodePost(Post{Room: "pub", User: "bob", Text: "again", Files: []string{fileA}}))
	wantCode(t, err, errs.Conflict)

	f.ok(EncodeRemove(Remove{Room: "pub", User: "bob", Seq: res.Seq}))
	if storeHolds(t, f.w, "MARKER-0123456789") {
		t.Fatal("the deleted message's file bytes are still stored")
	}
	if file, _ := getFile(f.w, "pub", fileA); file != nil {
		t.Fatalf("file record %+v survives its message", file)
	}
	if used, _ := fileUsage(f.w, "pub"); used != 0 {
		t.Fatalf("usage %d after the only file was deleted", used)
	}
}

func TestApplyFile_Refusals(t *testing.T) {
	chunk := func(user, id string, i, quota uint64, data string) []byte {
		return EncodeFileChunk(FileChunk{Room: "pub", User: user, ID: id, Index: i, Quota: quota, Data: []byte(data)})
	}
	cases := []struct {
		name  string
		prep  func(f *fixture)
		cmd   []byte
		code  errs.Code
		match string
	}{
		{"not a member", nil, chunk("carol", fileA, 0, 100, "x"), errs.Forbidden, "join room"},
		{"muted", func(f *fixture) {
			f.ok(EncodeModerate(Moderate{Room: "pub", User: "alice", Target: "bob", Action: ActMute, DurationMs: 60000}))
		}, chunk("bob", fileA, 0, 100, "x"), errs.Forbidden, "muted"},
		{"quota", func(f *fixture) { f.ok(chunk("bob", fileB, 0, 100, "0123456789")) },
			chunk("bob", fileA, 0, 15, "0123456789"), errs.Conflict, "quota is full: its files use 10 of its 15 bytes"},
		{"chunk out of order", func(f *fixture) { f.ok(chunk("bob", fileA, 0, 100, "ab")) },
			chunk("bob", fileA, 2, 100, "cd"), errs.Invalid, "comes before chunk 1"},
		{"first chunk missing", nil, chunk("bob", fileA, 1, 100, "cd"), errs.NotFound, "not started"},
		{"someone else's upload", func(f *fixture) { f.ok(chunk("alice", fileA, 0, 100, "ab")) },
			chunk("bob", fileA, 1, 100, "cd"), errs.Conflict, "in use"},
		{"commit wrong size", func(f *fixture) { f.ok(chunk("bob", fileA, 0, 100, "ab")) },
			EncodeFileCommit(FileCommit{Room: "pub", User: "bob", ID: fileA, Size: 3, Chunks: 1, Name: "n", ContentType: "a/b"}), errs.Invalid, "holds 1 chunks of 2 bytes"},
		{"attach unfinished", func(f *fixture) { f.ok(chunk("bob", fileA, 0, 100, "ab")) },
			EncodePost(Post{Room: "pub", User: "bob", Files: []string{fileA}}), errs.Invalid, "no finished upload"},
		{"attach someone else's", func(f *fixture) { f.upload("pub", "alice", fileA, []byte("ab"), 8) },
			EncodePost(Post{Room: "pub", User: "bob", Text: "x", Files: []string{fileA}}), errs.Invalid, "no finished upload of yours"},
		{"attach twice in one post", func(f *fixture) { f.upload("pub", "bob", fileA, []byte("ab"), 8) },
			EncodePost(Post{Room: "pub", User: "bob", Files: []string{fileA, fileA}}), errs.Invalid, "listed twice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := setup(t)
			if tc.prep != nil {
				tc.prep(f)
			}
			before := dump(t, f.w)
			_, err := f.apply(tc.cmd)
			wantCode(t, err, tc.code)
			if !strings.Contains(err.Error(), tc.match) {
				t.Fatalf("error %q does not say %q", err, tc.match)
			}
			if dump(t, f.w) != before {
				t.Fatal("a refused command changed the state")
			}
		})
	}
}

// A chunk sent again (a retry) is accepted and changes nothing; a commit
// sent again answers as the first did.
func TestApplyFile_Retries(t *testing.T) {
	f := setup(t)
	c0 := EncodeFileChunk(FileChunk{Room: "pub", User: "bob", ID: fileA, Quota: 100, Data: []byte("ab")})
	f.ok(c0)
	before := dump(t, f.w)
	f.ok(c0)
	if dump(t, f.w) != before {
		t.Fatal("a chunk sent again changed the state")
	}
	commit := EncodeFileCommit(FileCommit{Room: "pub", User: "bob", ID: fileA, Size: 2, Chunks: 1, Name: "n", ContentType: "a/b"})
	first := f.ok(commit)
	if again := f.ok(commit); again.Ts != first.Ts || again.N != 2 {
		t.Fatalf("commit again = %+v, first %+v", again, first)
	}
}

// Compact removes an upload left unfinished after FileOrphanMs, a file
// never attached after FileUnattachedMs, the files of a message retention
// removed and those of a deleted room; it keeps the rest.
func TestApplyFile_CompactCleans(t *testing.T) {
	f := setup(t)
	f.ok(EncodeFileChunk(FileChunk{Room: "pub", User: "bob", ID: fileA, Quota: 100, Data: []byte("ORPHAN")}))
	f.upload("pub", "bob", fileB, []byte("UNATTACHED"), 64)
	f.ok(EncodeCompact(Compact{}))
	if !storeHolds(t, f.w, "ORPHAN") || !storeHolds(t, f.w, "UNATTACHED") {
		t.Fatal("a fresh upload was removed")
	}
	f.now += FileOrphanMs + 10
	f.ok(EncodeCompact(Compact{}))
	if storeHolds(t, f.w, "ORPHAN") || !storeHolds(t, f.w, "UNATTACHED") {
		t.Fatal("want the orphaned chunks gone and the finished file kept")
	}
	f.now += FileUnattachedMs
	f.ok(EncodeCompact(Compact{}))
	if storeHolds(t, f.w, "UNATTACHED") {
		t.Fatal("a file never attached is still stored")
	}
	if used, _ := fileUsage(f.w, "pub"); used != 0 {
		t.Fatalf("usage %d with no file left", used)
	}

	// Retention: the message and its file expire together.
	f.upload("pub", "bob", fileA, []byte("EXPIRING"), 64)
	f.ok(EncodePost(Post{Room: "pub", User: "bob", Text: "x", Files: []string{fileA}}))
	f.now += 10_000
	f.ok(EncodeCompact(Compact{RetentionMs: 5000}))
	if storeHolds(t, f.w, "EXPIRING") {
		t.Fatal("the file of an expired message is still stored")
	}

	// A deleted room's files go at the next compaction.
	f.upload("pub", "bob", fileB, []byte("ROOMGONE"), 64)
	f.ok(EncodeDeleteRoom(DeleteRoom{Room: "pub", User: "alice"}))
	f.ok(EncodeCompact(Compact{}))
	if storeHolds(t, f.w, "ROOMGONE") {
		t.Fatal("a deleted room's file is still stored")
	}
}

// An aborted upload leaves nothing behind.
func TestApplyFile_Abort(t *testing.T) {
	f := setup(t)
	before := dump(t, f.w)
	f.ok(EncodeFileChunk(FileChunk{Room: "pub", User: "bob", ID: fileA, Quota: 100, Data: []byte("ab")}))
	f.ok(EncodeFileAbort(FileAbort{Room: "pub", User: "bob", ID: fileA}))
	// The room record and the member's marker are as before; only the
	// time moved.
	if got := dump(t, f.w); got != before {
		t.Fatalf("abort left state behind:\n%s\nwas\n%s", got, before)
	}
}

// FuzzDecodeFile: a stored file record decodes without panicking and
// re-encodes to its input.
func FuzzDecodeFile(f *testing.F) {
	f.Add(encodeFile(&fileRecord{state: fileAttached, ts: 9, owner: "bob", size: 3, chunks: 1, seq: 4, name: "a.png", contentType: "image/png"}))
	f.Add(encodeFile(&fileRecord{state: fileUploading, ts: 1, owner: "a"}))
	f.Fuzz(func(t *testing.T, v []byte) {
		rec, err := decodeFile([]byte("k"), v)
		if err != nil {
			return
		}
		if !bytes.Equal(encodeFile(rec), v) {
			t.Fatalf("%+v re-encodes to % x, not % x", rec, encodeFile(rec), v)
		}
	})
}

// BenchmarkStateMachine_ApplyFileChunk applies full 512 KiB chunks of one
// upload after another (a new file every 16 chunks, the quota never met;
// the store starts afresh every 64 chunks).
func BenchmarkStateMachine_ApplyFileChunk(b *testing.B) {
	data := bytes.Repeat([]byte("x"), MaxFileChunk)
	var sm StateMachine
	var w *sortedMem
	reset := func() {
		w = &sortedMem{}
		f := &fixture{t: b, w: w, now: 1}
		f.create("general", "alice")
	}
	reset()
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := range b.N {
		if i > 0 && i%64 == 0 { // keep memory bounded; a file starts here
			b.StopTimer()
			reset()
			b.StartTimer()
		}
		id := fmt.Sprintf("%016x", i/16)
		cmd := EncodeFileChunk(FileChunk{Room: "general", User: "alice", ID: id, Index: uint64(i % 16), Quota: 1 << 62, Data: data})
		res, err := sm.Apply(w, state.Meta{Index: uint64(i), TimeMs: int64(i)}, cmd)
		if err != nil || res[0] != statusOK {
			b.Fatal(res, err)
		}
	}
}
