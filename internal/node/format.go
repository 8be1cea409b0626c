package node

import "fmt"

// DataFormat is the layout of what this build stores in a data directory:
// the node record, the Raft logs and every domain's state records. It goes
// up whenever a build can no longer read what an earlier one stored, and
// the node record keeps the format it was written with, so a build never
// misreads a data directory: it refuses one it cannot read (checkFormat).
//
//   - 1: everything written before the format was recorded.
//   - 2: queues index ready messages by priority and keep dead letters,
//     delays, expiries and FIFO groups (internal/queue); KV keys with a
//     {tag} are placed by the tag (kv.RoutingKey).
const DataFormat = 2

// checkFormat refuses a data directory whose node record says it was
// written in another format than this build's; 0 is the first format,
// from before the format was recorded.
func checkFormat(dir string, format int) error {
	if format == 0 {
		format = 1
	}
	switch {
	case format < DataFormat:
		return fmt.Errorf("data dir %s holds data format %d, written by an older build; this build reads format %d only: "+
			"run the build that wrote it, or start this node on an empty data dir (it joins again and copies its replicas from peers that run this build)",
			dir, format, DataFormat)
	case format > DataFormat:
		return fmt.Errorf("data dir %s holds data format %d, written by a newer build; this build reads format %d: run the newer build",
			dir, format, DataFormat)
	}
	return nil
}
