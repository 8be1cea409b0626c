package multiraft

import (
	"testing"

	raftpb "go.etcd.io/raft/v3/raftpb"
)

func TestDropForDisk(t *testing.T) {
	cmd := raftpb.Entry{Type: raftpb.EntryNormal, Data: []byte("put")}
	empty := raftpb.Entry{Type: raftpb.EntryNormal}
	conf := raftpb.Entry{Type: raftpb.EntryConfChangeV2, Data: []byte("cc")}
	for _, c := range []struct {
		name string
		m    raftpb.Message
		low  bool
		want bool
	}{
		{"commands, disk low", raftpb.Message{Type: raftpb.MsgApp, Entries: []raftpb.Entry{empty, cmd}}, true, true},
		{"commands, room left", raftpb.Message{Type: raftpb.MsgApp, Entries: []raftpb.Entry{cmd}}, false, false},
		{"a new leader's empty entry", raftpb.Message{Type: raftpb.MsgApp, Entries: []raftpb.Entry{empty}}, true, false},
		{"a membership change", raftpb.Message{Type: raftpb.MsgApp, Entries: []raftpb.Entry{conf}}, true, false},
		{"no entries", raftpb.Message{Type: raftpb.MsgApp}, true, false},
		{"heartbeat", raftpb.Message{Type: raftpb.MsgHeartbeat}, true, false},
		{"vote", raftpb.Message{Type: raftpb.MsgVote}, true, false},
		{"a transfer's timeout, disk low", raftpb.Message{Type: raftpb.MsgTimeoutNow}, true, true},
		{"a transfer's timeout, room left", raftpb.Message{Type: raftpb.MsgTimeoutNow}, false, false},
	} {
		if got := dropForDisk(c.m, func() bool { return c.low }); got != c.want {
			t.Errorf("%s: dropForDisk = %v, want %v", c.name, got, c.want)
		}
	}
}
