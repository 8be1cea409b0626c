package storage

import "encoding/binary"

// Key layout (all integers big-endian so that byte order equals numeric order):
//
//	0x01                              node record
//	0x02 <group u64> 0x01 <index u64> raft log entry (marshalled raftpb.Entry)
//	0x02 <group u64> 0x02             hard state (marshalled raftpb.HardState)
//	0x02 <group u64> 0x03             truncation point: <index u64><term u64>
//	0x02 <group u64> 0x04             applied state: <index u64><term u64><raftpb.ConfState>
//	0x03 <group u64> <key...>         partition state, key relative to the group
//	0x04 <log id u8> <seq u64>        node log record (NodeLog): node-local, never replicated
//	0x05 <group u64>                  highest replica id of the group destroyed here: <id u64>
const (
	tagNode    byte = 0x01
	tagRaft    byte = 0x02
	tagState   byte = 0x03
	tagNodeLog byte = 0x04
	tagRemoved byte = 0x05

	subLog       byte = 0x01
	subHardState byte = 0x02
	subTrunc     byte = 0x03
	subApplied   byte = 0x04

	groupPrefixLen = 1 + 8
	raftKeyLen     = groupPrefixLen + 1
	logKeyLen      = raftKeyLen + 8
	nodeLogKeyLen  = 2 + 8
)

// nodeKey is the key of the node record.
var nodeKey = []byte{tagNode}

// nodeBlobKey is the key of the node blob called name: the node record's
// key followed by the name.
func nodeBlobKey(name string) []byte { return append([]byte{tagNode}, name...) }

// groupPrefix returns tag <group>.
func groupPrefix(tag byte, group uint64) []byte {
	k := make([]byte, groupPrefixLen)
	k[0] = tag
	binary.BigEndian.PutUint64(k[1:], group)
	return k
}

// raftKey returns the key of one of a group's single-record raft keys (hard state, truncation
// point, applied state).
func raftKey(group uint64, sub byte) []byte {
	k := make([]byte, raftKeyLen)
	k[0] = tagRaft
	binary.BigEndian.PutUint64(k[1:], group)
	k[groupPrefixLen] = sub
	return k
}

// putLogKey writes the log key of (group, index) into dst, which must be logKeyLen long.
func putLogKey(dst []byte, group, index uint64) {
	dst[0] = tagRaft
	binary.BigEndian.PutUint64(dst[1:], group)
	dst[groupPrefixLen] = subLog
	binary.BigEndian.PutUint64(dst[raftKeyLen:], index)
}

// logKey returns the log key of (group, index).
func logKey(group, index uint64) []byte {
	k := make([]byte, logKeyLen)
	putLogKey(k, group, index)
	return k
}

// logSpan returns the bounds [lo, hi) covering every log entry of a group.
func logSpan(group uint64) (lo, hi []byte) {
	return logKey(group, 0), raftKey(group, subHardState)
}

// logIndex extracts the index from a log key.
func logIndex(key []byte) uint64 {
	return binary.BigEndian.Uint64(key[raftKeyLen:])
}

// putRaftKey writes raftKey(group, sub) into dst, which must be raftKeyLen long.
func putRaftKey(dst []byte, group uint64, sub byte) {
	dst[0] = tagRaft
	binary.BigEndian.PutUint64(dst[1:], group)
	dst[groupPrefixLen] = sub
}
