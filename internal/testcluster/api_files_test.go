package testcluster_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/testcluster"
)

// File limits of the files test: small enough to fill the quota quickly.
const (
	testMaxFile    = 2 << 20
	testFileQuota  = 5 << 20
	filesTestRoom  = "files"
	fileMarker     = "FILE-MARKER-b7c1"
	refusedMarker  = "REFUSED-MARKER-e4a9"
	oversizeMarker = "OVERSIZE-MARKER-5d02"
	cutMarker      = "CUT-MARKER-90ab"
)

// failingReader fails every read, as a client that goes away does.
type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("the client went away") }

// fileBytes returns n random bytes with marker at the start of every
// chunk, so that each chunk stored can be found by a scan of the store.
func fileBytes(n int, marker string) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), 7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	for off := 0; off < n; off += chat.MaxFileChunk {
		copy(b[off:], marker)
	}
	return b
}

// download reads file id through cl.
func download(t *testing.T, cl *client.Client, id string) (client.FileInfo, []byte, error) {
	t.Helper()
	f, body, err := cl.DownloadFile(apiCtx(t), id)
	if err != nil {
		return f, nil, err
	}
	defer body.Close()
	b, err := io.ReadAll(body)
	return f, b, err
}

// storeCount counts the values of node i's replica of partition p that
// contain marker.
func storeCount(t *testing.T, c *testcluster.Cluster, i int, p uint64, marker string) int {
	t.Helper()
	n := 0
	_, fnErr, err := c.Node(i).Router().ReadLocal(apiCtx(t), p, false, func(r state.Reader) error {
		return r.Scan(nil, nil, func(_, v []byte) bool {
			if bytes.Contains(v, []byte(marker)) {
				n++
			}
			return true
		})
	})
	if err := errors.Join(err, fnErr); err != nil {
		t.Fatalf("scan n%d: %v", i+1, err)
	}
	return n
}

// Files over the public client on a 3-node cluster: a file larger than
// 1 MiB is stored in chunks and read back byte for byte through every
// node, a retried upload stores one file, posts carry it, the limits and
// permissions refuse what they must with nothing stored, and deleting the
// message removes its bytes from every replica's store.
func TestAPI_Files(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{Nodes: 3, ReplicationFactor: 3, NoSync: true,
		Configure: func(_ int, cfg *config.Config) {
			cfg.RateLimit = 1 << 20
			cfg.MaxFileSize, cfg.RoomFileQuota = testMaxFile, testFileQuota
		}})
	admin := signUpAdmin(t, c, 0, "root")
	olga := signUp(t, c, 0, 0, "olga")
	mel := signUp(t, c, 1, 1, "mel")
	nora := signUp(t, c, 2, 2, "nora")
	waitProtocol(t, c, chat.FileProtocol)
	if _, err := olga.CreateRoom(apiCtx(t), client.RoomSpec{Name: filesTestRoom}); err != nil {
		t.Fatal(err)
	}
	if _, err := mel.JoinRoom(apiCtx(t), filesTestRoom, ""); err != nil {
		t.Fatal(err)
	}
	p := c.Node(0).Router().PartitionOf(filesTestRoom)

	data := fileBytes(3<<19, fileMarker)
	f := uploadTwice(t, c, p, olga, data)
	// Before it is attached only its owner sees it.
	_, _, err := download(t, as(c, 1, mel), f.ID)
	mustStatus(t, err, 404, "not_found")

	res, err := as(c, 1, olga).Post(apiCtx(t), filesTestRoom, "the report", client.PostOptions{Files: []string{f.ID}})
	if err != nil {
		t.Fatal(err)
	}
	page, err := as(c, 2, mel).History(apiCtx(t), filesTestRoom, client.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	last := page[len(page)-1]
	want := client.FileInfo{ID: f.ID, Name: "report.bin", Size: int64(len(data)), ContentType: "application/octet-stream", URL: "/api/v1/files/" + f.ID}
	if last.Seq != res.Seq || len(last.Files) != 1 || last.Files[0] != want {
		t.Fatalf("history ends with %+v, want message %d with %+v", last, res.Seq, want)
	}
	for i := range c.Len() {
		got, b, err := download(t, as(c, i, mel), f.ID)
		if err != nil || !bytes.Equal(b, data) || got.Name != "report.bin" || got.Size != int64(len(data)) {
			t.Fatalf("download through n%d: %+v, %d bytes, %v", i+1, got, len(b), err)
		}
	}
	_, err = as(c, 1, olga).Post(apiCtx(t), filesTestRoom, "again", client.PostOptions{Files: []string{f.ID}})
	mustStatus(t, err, 409, "conflict")
	// The owner's export lists the file as a link.
	var export bytes.Buffer
	if _, err := olga.ExportRoom(apiCtx(t), filesTestRoom, &export); err != nil {
		t.Fatal(err)
	}
	if link := `"url":"/api/v1/files/` + f.ID + `"`; !strings.Contains(export.String(), link) {
		t.Fatalf("the export does not link the file (%s):\n%s", link, export.String())
	}

	checkFileRefusals(t, c, p, olga, nora)

	// Deleting the message deletes its bytes on every replica.
	if _, err := as(c, 2, olga).DeleteMessage(apiCtx(t), filesTestRoom, res.Seq); err != nil {
		t.Fatal(err)
	}
	_, _, err = download(t, as(c, 0, mel), f.ID)
	mustStatus(t, err, 404, "not_found")
	waitStores(t, c, p, "the deleted message's file gone", []string{fileMarker}, nil)
	poll.Until(t, 30*time.Second, "identical replicas", func() error {
		rep, err := admin.Verify(apiCtx(t))
		if err == nil && (rep.Mismatches != 0 || rep.Unverified != 0) {
			err = fmt.Errorf("%d mismatches, %d unverified", rep.Mismatches, rep.Unverified)
		}
		return err
	})
}

// uploadTwice uploads data (1.5 MiB: three chunks) as olga, then retries
// it with the same idempotency key through another node, and checks that
// every replica stores one file.
func uploadTwice(t *testing.T, c *testcluster.Cluster, p uint64, olga *client.Client, data []byte) client.FileInfo {
	t.Helper()
	ctx := client.WithIdempotencyKey(apiCtx(t), "upload-1")
	f, err := olga.UploadFile(ctx, filesTestRoom, "report.bin", "application/octet-stream", bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	again, err := as(c, 2, olga).UploadFile(ctx, filesTestRoom, "report.bin", "application/octet-stream", bytes.NewReader(data), -1)
	if err != nil || again.ID != f.ID {
		t.Fatalf("retried upload = %+v, %v; want %s again", again, err, f.ID)
	}
	for i := range c.Len() {
		poll.Until(t, 30*time.Second, fmt.Sprintf("n%d stores one file's three chunks", i+1), func() error {
			if n := storeCount(t, c, i, p, fileMarker); n != 3 {
				return fmt.Errorf("%d chunks with the marker", n)
			}
			return nil
		})
	}
	return f
}

// checkFileRefusals checks the refusals of uploads and downloads: each a
// 4xx naming the problem, each leaving nothing stored.
func checkFileRefusals(t *testing.T, c *testcluster.Cluster, p uint64, olga, nora *client.Client) {
	t.Helper()
	upload := func(cl *client.Client, name, ct string, b []byte, size int64) error {
		_, err := cl.UploadFile(apiCtx(t), filesTestRoom, name, ct, bytes.NewReader(b), size)
		return err
	}
	small := []byte("small")
	mustStatus(t, upload(nora, "a.txt", "text/plain", small, 5), 403, "forbidden")
	mustMessage(t, upload(olga, "a.txt", "", small, 5), 400, "Content-Type")
	mustMessage(t, upload(olga, "a/b.txt", "text/plain", small, 5), 400, "path separator")
	mustMessage(t, upload(olga, "a\x1b[2J.txt", "text/plain", small, 5), 400, "name")

	// Over --max-file-size: refused before reading with a known size,
	// while reading without; nothing stays stored.
	big := fileBytes(testMaxFile+1, oversizeMarker)
	mustMessage(t, upload(olga, "big.bin", "application/octet-stream", big, int64(len(big))), 413, "limit is 2097152 bytes")
	mustMessage(t, upload(olga, "big.bin", "application/octet-stream", big, -1), 413, "limit of 2097152 bytes")

	// The quota: 1.5 MiB used, 2 MiB more fit, the next 2 MiB do not.
	if err := upload(olga, "fits.bin", "application/octet-stream", fileBytes(testMaxFile, "FITS"), -1); err != nil {
		t.Fatal(err)
	}
	refused := fileBytes(testMaxFile, refusedMarker)
	mustMessage(t, upload(olga, "full.bin", "application/octet-stream", refused, -1), 409, "quota is full")
	mustMessage(t, upload(olga, "full.bin", "application/octet-stream", refused, int64(len(refused))), 409, "5242880 bytes")
	// An upload cut off midway (its client fails after a chunk and a
	// half) leaves no file and no chunk.
	cut := io.MultiReader(bytes.NewReader(fileBytes(3<<18, cutMarker)), failingReader{})
	if err := upload(olga, "cut.bin", "application/octet-stream", nil, -1); err == nil {
		t.Fatal("an empty upload was accepted")
	}
	if _, err := olga.UploadFile(apiCtx(t), filesTestRoom, "cut.bin", "application/octet-stream", cut, -1); err == nil {
		t.Fatal("an upload cut off midway succeeded")
	}
	waitStores(t, c, p, "no refused or cut upload stored", []string{oversizeMarker, refusedMarker, cutMarker}, []string{fileMarker})

	// A non-member may not download; images are inline, SVG and HTML
	// attachments, all with nosniff.
	for _, tc := range []struct{ name, ct, disposition string }{
		{"dot.png", "image/png", "inline"},
		{"x.svg", "image/svg+xml", "attachment"},
		{"x.html", "text/html", "attachment"},
	} {
		f, err := olga.UploadFile(apiCtx(t), filesTestRoom, tc.name, tc.ct, strings.NewReader("<svg onload=alert(1)>"), -1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := olga.Post(apiCtx(t), filesTestRoom, "", client.PostOptions{Files: []string{f.ID}}); err != nil {
			t.Fatal(err)
		}
		_, _, err = download(t, nora, f.ID)
		mustStatus(t, err, 403, "forbidden")
		h := rawHeaders(t, c, olga, f.URL)
		if !strings.HasPrefix(h.Get("Content-Disposition"), tc.disposition+";") || h.Get("X-Content-Type-Options") != "nosniff" ||
			h.Get("Content-Type") != tc.ct || !strings.Contains(h.Get("Content-Security-Policy"), "sandbox") {
			t.Errorf("%s served with %v", tc.ct, h)
		}
	}
}

// mustMessage checks err is a *client.Error with status whose message
// says what.
func mustMessage(t *testing.T, err error, status int, what string) {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) || e.Status != status || !strings.Contains(e.Message, what) {
		t.Fatalf("error %v, want %d naming %q", err, status, what)
	}
}

// rawHeaders GETs path from node 0 as cl and returns the answer's headers.
func rawHeaders(t *testing.T, c *testcluster.Cluster, cl *client.Client, path string) http.Header {
	t.Helper()
	req, err := http.NewRequestWithContext(apiCtx(t), http.MethodGet, "http://"+c.Node(0).HTTPAddr()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+cl.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d", path, resp.StatusCode)
	}
	return resp.Header
}

// A node that holds no replica of the room's partition forwards every
// chunk of an upload and every chunk of a download: the bytes match.
func TestAPI_FilesForwarded(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := newAPICluster(t, 4, 3)
	signUpAdmin(t, c, 0, "root")
	const room = "forwarded"
	far := noReplica(c, room)
	if far < 0 {
		t.Fatal("every node holds the room's partition")
	}
	olga := signUp(t, c, far, far, "olga")
	waitProtocol(t, c, chat.FileProtocol)
	if _, err := olga.CreateRoom(apiCtx(t), client.RoomSpec{Name: room}); err != nil {
		t.Fatal(err)
	}
	data := fileBytes(5<<18, "FORWARDED")
	f, err := olga.UploadFile(apiCtx(t), room, "far.bin", "application/octet-stream", bytes.NewReader(data), -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := olga.Post(apiCtx(t), room, "", client.PostOptions{Files: []string{f.ID}}); err != nil {
		t.Fatal(err)
	}
	got, b, err := download(t, olga, f.ID)
	if err != nil || !bytes.Equal(b, data) || got.Size != int64(len(data)) {
		t.Fatalf("download through n%d: %+v, %d of %d bytes, %v", far+1, got, len(b), len(data), err)
	}
}
