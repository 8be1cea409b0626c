package compat

import (
	"fmt"
	"runtime/debug"
	"sync"
)

// DataFormat is the layout of what this build stores in a data directory:
// the node record, the Raft logs and every domain's state records. It goes
// up whenever a build can no longer read what an earlier one stored.
//
//   - 1: everything written before the format was recorded.
//   - 2: queues index ready messages by priority and keep dead letters,
//     delays, expiries and FIFO groups (internal/queue); KV keys with a
//     {tag} are placed by the tag (kv.RoutingKey).
//   - 3: what protocol 2 brings may be stored: API tokens, room roles,
//     bans, mutes, invitations and settings (room retention and legal
//     holds among them), incoming and outgoing webhooks (with their outbox
//     and delivery logs); and what protocol 3 brings: idempotency
//     records stored as one key (multiraft's dedup rule 3). A format 2
//     directory is read as it is (it holds none of them), so an upgrade
//     from format 2 is a restart; a build of format 2 refuses a format 3
//     directory instead of misreading it.
const DataFormat = 3

// MinDataFormat is the oldest format this build opens. A build that raises
// DataFormat either keeps reading the previous format (and migrates it when
// it opens the directory), so that an upgrade is a restart, or raises
// MinDataFormat too, and the upgrade note says the node must be rebuilt
// from its peers on an empty data directory.
const MinDataFormat = 2

// Protocol is the newest internal protocol this build speaks.
//
//   - 1: the protocol of every build before versions were negotiated.
//   - 2: personal API tokens: the account commands CreateToken, RevokeToken
//     and TouchTokens (account.TokenProtocol), proposed only once the
//     cluster speaks 2;
//     room roles, invitations, moderation and settings: the chat
//     commands SetRole, Invite, Moderate and Settings, invitation-only
//     rooms, and the rules they bring to joins and posts
//     (chat.ModerationProtocol);
//     incoming webhooks: the chat commands CreateHook, RevokeHook and
//     HookPost (chat.HookProtocol), proposed only once the cluster speaks
//     2; outgoing webhooks: CreateOutHook and DeleteOutHook, gated alike,
//     and Delivered, proposed only for the outbox entries such a hook
//     leads to;
//     and per-room retention and legal holds: the Settings bits
//     retention_days and retention_messages and the chat command LegalHold
//     (chat.RetentionProtocol), proposed only once the cluster speaks 2;
//     and a queue Receive that acknowledges leases first (its flag bit
//     flagAck, queue.AckOnReceiveProtocol), proposed only once the
//     cluster speaks 2;
//     and the binary propose, get and scan calls
//     (partition.MethodProposeBin, MethodGetBin, MethodScanBin), sent
//     only once the cluster speaks 2 (partition.BinaryProtocol);
//     and checked client proposal ids, which refuse an idempotency key
//     reused for another request (multiraft.CheckedClientProposalID),
//     proposed only once the cluster speaks 2
//     (multiraft.IdempotencyCheckProtocol);
//     and the dedup expiry rule 2 (at most 64 expired records deleted after
//     every command, instead of 8 every 16th entry, which fell behind
//     steady writes), which a group moves to at the index of an
//     engine-reserved command its leader proposes only once the cluster
//     speaks 2 (multiraft.DedupRuleProtocol), and under it the sweeps of
//     an idle group's expired records (an engine-reserved command too).
//   - 3: the dedup rule 3 (each new idempotency record stored as one key
//     ordered by expiry instead of a record and an index key), which a
//     group moves to at the index of the same engine-reserved command, its
//     leader proposing it only once the cluster speaks 3
//     (multiraft.DedupInlineProtocol). A cluster that speaks 2 moves to
//     rule 2 as before.
const Protocol = 3

// MinProtocol is the oldest internal protocol this build still speaks: the
// protocol of the previous release, so that a cluster can be upgraded one
// node at a time.
const MinProtocol = 1

// CheckDataFormat returns nil when this build reads a data directory
// written in format (0: the first format, from before it was recorded), and
// otherwise an error for the operator that names the directory and says
// what to do. dir is only used in the message.
func CheckDataFormat(dir string, format int) error {
	if format == 0 {
		format = 1
	}
	switch {
	case format < MinDataFormat:
		return fmt.Errorf("data dir %s holds data format %d, written by an older build; this build reads formats %s only: "+
			"run the build that wrote it, or start this node on an empty data dir (it joins again and copies its replicas from peers that run this build)",
			dir, format, formatRange())
	case format > DataFormat:
		return fmt.Errorf("data dir %s holds data format %d, written by a newer build; this build reads formats %s: run the newer build",
			dir, format, formatRange())
	}
	return nil
}

func formatRange() string {
	if MinDataFormat == DataFormat {
		return fmt.Sprint(DataFormat)
	}
	return fmt.Sprintf("%d to %d", MinDataFormat, DataFormat)
}

// Compatible reports whether a peer that speaks protocols lo through hi can
// talk with this build. A peer from before versions were negotiated sends
// one version; its lo and hi are equal.
func Compatible(lo, hi int) bool {
	return lo <= Protocol && hi >= MinProtocol && lo <= hi
}

// ClusterProtocol returns the protocol every node of a cluster speaks: the
// lowest of the members' newest protocols, where a member that does not say
// (a build from before it was gossiped, reported as 0) speaks 1. It is
// Protocol for an empty list.
func ClusterProtocol(members []int) int {
	p := Protocol
	for _, m := range members {
		p = min(p, max(m, 1))
	}
	return p
}

// Build returns how this binary names itself to operators and peers: the
// module version ("(devel)" for a build from a work tree) and, when go build
// stamped it, the first 12 digits of the commit, with "+dirty" when the tree
// had uncommitted changes; for example "(devel) 0024cc1b4e2a+dirty".
func Build() string { return build() }

var build = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	return buildName(bi, ok)
})

// buildName is Build for a given build information (ok false: none).
func buildName(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return "unknown"
	}
	version := bi.Main.Version
	if version == "" {
		version = "unknown"
	}
	var commit string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if commit == "" {
		return version
	}
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if dirty {
		commit += "+dirty"
	}
	return version + " " + commit
}
