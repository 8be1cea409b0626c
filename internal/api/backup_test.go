package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/parley-chat/parley/internal/backup"
	"github.com/parley-chat/parley/internal/errs"
)

// The test admin streams backups too, so the backup routes are registered
// wherever it is wired (the permission matrix among them).
var _ BackupSource = (*recordingAdmin)(nil)

func (a *recordingAdmin) BackupManifest(context.Context) (*BackupManifest, error) {
	return &BackupManifest{ClusterID: "c1", Hash: "fnv1a-64", Partitions: 2, ReplicationFactor: 3, DataFormat: 2}, a.record("backup manifest")
}

func (a *recordingAdmin) BackupGroup(_ context.Context, g uint64, w io.Writer) error {
	if err := a.record("backup group"); err != nil {
		return err
	}
	if g > 2 {
		return errs.New(errs.NotFound, "no group %d", g)
	}
	sw := backup.NewSectionWriter(w, g, 10+g)
	if err := sw.Pair([]byte("k"), []byte("v")); err != nil {
		return err
	}
	_, err := sw.Finish()
	return err
}

func TestBackupRoutes(t *testing.T) {
	adm := &recordingAdmin{}
	e := newFullEnv(t, envOptions{cfg: Config{Admin: adm}})
	alice := e.signUp(t, "alice") // the first user: admin
	bob := e.signUp(t, "bob")
	for _, path := range []string{"/api/v1/cluster/backup", "/api/v1/cluster/backup/1"} {
		mustError(t, e.call(t, bob, http.MethodGet, path, ""), http.StatusForbidden, "forbidden", "only an admin may take a backup")
	}
	if len(adm.calls) != 0 {
		t.Fatalf("a refused request reached the cluster: %v", adm.calls)
	}

	w := e.call(t, alice, http.MethodGet, "/api/v1/cluster/backup", "")
	var m BackupManifest
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &m) != nil || m.Partitions != 2 || m.ClusterID != "c1" {
		t.Fatalf("manifest = %d %s", w.Code, w.Body)
	}
	w = e.call(t, alice, http.MethodGet, "/api/v1/cluster/backup/2", "")
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("group 2 = %d %s", w.Code, w.Header())
	}
	info, err := backup.CheckSection(bytes.NewReader(w.Body.Bytes()))
	if err != nil || info.Group != 2 || info.Applied != 12 || info.Keys != 1 {
		t.Fatalf("group 2's section: %+v %v", info, err)
	}
	mustError(t, e.call(t, alice, http.MethodGet, "/api/v1/cluster/backup/x", ""), http.StatusBadRequest, "invalid", "group must be a group number")
	mustError(t, e.call(t, alice, http.MethodGet, "/api/v1/cluster/backup/9", ""), http.StatusNotFound, "not_found", "no group 9")

	adm.err = errs.New(errs.Unavailable, "no leader")
	if w := e.call(t, alice, http.MethodGet, "/api/v1/cluster/backup/1", ""); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("unavailable group = %d %s", w.Code, w.Body)
	}
	adm.err = errors.New("disk on fire")
	if w := e.call(t, alice, http.MethodGet, "/api/v1/cluster/backup/1", ""); w.Code != http.StatusInternalServerError || bytes.Contains(w.Body.Bytes(), []byte("fire")) {
		t.Fatalf("internal error = %d %s", w.Code, w.Body)
	}
}
