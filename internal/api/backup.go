package api

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/parley-chat/parley/internal/errs"
)

// BackupSource streams the cluster's state for `parley backup`. The node
// implements it beside ClusterAdmin: a Server whose Config.Admin also
// implements BackupSource serves the backup routes (admin only, audited).
type BackupSource interface {
	// BackupManifest describes the cluster a backup is taken of.
	BackupManifest(ctx context.Context) (*BackupManifest, error)
	// BackupGroup writes one group's backup section (internal/backup's
	// SectionWriter encoding) to w: its state at one applied index, read
	// after a linearizable read barrier. An error before anything was
	// written is a normal error; after, the stream is cut.
	BackupGroup(ctx context.Context, group uint64, w io.Writer) error
}

// BackupManifest is the body of GET /api/v1/cluster/backup: what the
// header of a backup of this cluster says.
type BackupManifest struct {
	ClusterID         string `json:"cluster_id"`
	Hash              string `json:"hash"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replication_factor"`
	// DataFormat is the data format of the nodes' state records.
	DataFormat int `json:"data_format"`
}

// backupGroupTimeout bounds the stream of one group's section.
const backupGroupTimeout = 30 * time.Minute

// backupRoutes registers the backup routes when the admin service can
// stream the cluster's state.
func (s *Server) backupRoutes() {
	src, ok := s.admin.(BackupSource)
	if !ok {
		return
	}
	s.handleAdmin("GET /api/v1/cluster/backup", "take a backup", func(w http.ResponseWriter, r *http.Request) {
		m, err := src.BackupManifest(r.Context())
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, m)
	})
	s.handleAdmin("GET /api/v1/cluster/backup/{group}", "take a backup", func(w http.ResponseWriter, r *http.Request) {
		s.backupGroup(w, r, src)
	})
}

// backupGroup serves GET /api/v1/cluster/backup/{group}: the group's
// section as application/octet-stream. The response's write deadline is
// lifted (a large group takes longer than the server's WriteTimeout) and
// the stream bounded by backupGroupTimeout instead. A failure once bytes
// were sent cuts the connection, so the client sees a broken section, never
// a short one that looks whole (the section's end record and checksum
// would be missing anyway).
func (s *Server) backupGroup(w http.ResponseWriter, r *http.Request, src BackupSource) {
	g, err := strconv.ParseUint(r.PathValue("group"), 10, 64)
	if err != nil {
		s.writeError(w, r, errs.New(errs.Invalid, "group must be a group number (0 for the metadata group, 1..P for a partition), got %q", r.PathValue("group")))
		return
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	ctx, cancel := context.WithTimeout(r.Context(), backupGroupTimeout)
	defer cancel()
	sw := &startedWriter{w: w}
	if err := src.BackupGroup(ctx, g, sw); err != nil {
		if !sw.started {
			s.writeError(w, r, err)
			return
		}
		s.log.Warn("backup stream cut", "group", g, "err", err)
		panic(http.ErrAbortHandler)
	}
}

// startedWriter sets the stream's headers before its first byte and
// remembers that bytes went out.
type startedWriter struct {
	w       http.ResponseWriter
	started bool
}

func (sw *startedWriter) Write(p []byte) (int, error) {
	if !sw.started {
		sw.started = true
		sw.w.Header().Set("Content-Type", "application/octet-stream")
		sw.w.WriteHeader(http.StatusOK)
	}
	return sw.w.Write(p)
}
