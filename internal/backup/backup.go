// Package backup is the file format of a Parley backup: a header saying
// what cluster the backup is of, then one section per Raft group (the
// metadata group and every partition) holding the group's applied index and
// every key/value pair of its state at that index, each section with its
// own SHA-256 and the whole file with another. It is written and read as a
// stream, one pair at a time: nothing is held in memory whole. DESIGN.md
// explains the layout and why.
package backup

import (
	"errors"
	"fmt"
)

// Layout constants (DESIGN.md).
const (
	// Magic starts every backup file.
	Magic = "PRLYBAK1"
	// FormatVersion is the version of this layout, recorded in the header.
	FormatVersion = 1

	blockHeader  = 'H'
	blockSection = 'G'
	blockEnd     = 'E'
	recordPair   = 0x01
	recordEnd    = 0x00

	// MaxKey and MaxValue bound one pair, as the Raft snapshot stream does.
	MaxKey    = 1 << 20
	MaxValue  = 1 << 30
	maxHeader = 1 << 20
	sumSize   = 32 // SHA-256
	// readChunk is how much of a value is read at once, so a corrupt
	// length cannot make a reader allocate much before the data runs out.
	readChunk = 1 << 20
)

// ErrCorrupt is wrapped by every error about a malformed, truncated or
// tampered backup.
var ErrCorrupt = errors.New("backup file is corrupt")

// corruptf returns an error wrapping ErrCorrupt.
func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// Header describes the backed-up cluster; it is the file's first block.
type Header struct {
	// FormatVersion is the layout's version (FormatVersion).
	FormatVersion int `json:"format_version"`
	// DataFormat is the data format of the source nodes' state records
	// (compat.DataFormat): a build restores the formats it reads.
	DataFormat int `json:"data_format"`
	// ClusterID is the source cluster's id.
	ClusterID string `json:"cluster_id"`
	// Hash names the partitioning hash.
	Hash string `json:"hash"`
	// Partitions is the source's P; the file holds groups 0..P.
	Partitions int `json:"partitions"`
	// ReplicationFactor is the source's RF.
	ReplicationFactor int `json:"replication_factor"`
	// CreatedMs is when the backup started (Unix ms, the writer's clock).
	CreatedMs int64 `json:"created_ms"`
}

// validate checks what a reader relies on.
func (h *Header) validate() error {
	switch {
	case h.FormatVersion != FormatVersion:
		return fmt.Errorf("backup format version %d is not supported (this build reads %d)", h.FormatVersion, FormatVersion)
	case h.Partitions < 1:
		return corruptf("header: %d partitions", h.Partitions)
	}
	return nil
}

// SectionInfo summarises one section.
type SectionInfo struct {
	// Group is the Raft group: 0 the metadata group, 1..P the partitions.
	Group uint64 `json:"group"`
	// Applied is the group's applied index the state is of.
	Applied uint64 `json:"applied"`
	// Keys is the number of pairs.
	Keys uint64 `json:"keys"`
	// Bytes is the size of the keys and values.
	Bytes uint64 `json:"bytes"`
}

// Summary is what a whole file holds.
type Summary struct {
	Header   Header        `json:"header"`
	Sections []SectionInfo `json:"sections"`
	// FileBytes is the size of the file.
	FileBytes int64 `json:"file_bytes"`
	// SHA256 is the whole-file checksum, in hex.
	SHA256 string `json:"sha256"`
}
