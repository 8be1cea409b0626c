package cli

import (
	"context"
	"fmt"
	"strings"
)

// command is one entry of the dispatch table: either a leaf with an action, or a
// group with subcommands.
type command struct {
	name    string
	summary string
	section string // heading in the parent's help; "" for subcommands
	note    string // for a group: printed in its help under the commands
	action  func(ctx context.Context, e *Env, path string, args []string) error
	subs    []*command
}

// Section titles of the top-level commands in the help.
const (
	nodesSection   = "Running nodes"
	clientsSection = "Client commands (--server URL, default " + defaultServer + " or $PARLEY_SERVER)"
)

// rootCommand returns the full command tree of `parley`, in the order the
// help lists it.
func rootCommand() *command {
	var subs []*command
	for _, part := range [][]*command{nodeCommands(), accountCommands(), chatCommands(), dataCommands(), adminCommands()} {
		subs = append(subs, part...)
	}
	return &command{
		name:    "parley",
		summary: "Parley: a replicated, partitioned messaging platform in one binary.",
		subs:    subs,
	}
}

// nodeCommands runs and seeds nodes.
func nodeCommands() []*command {
	return []*command{
		{name: "serve", section: nodesSection, summary: "run one node", action: runServe},
		{name: "dev", section: nodesSection, summary: "run a local cluster of N nodes in this process", action: runDev},
		{name: "health", section: nodesSection, summary: "exit 0 when a node is ready (the container health check)", action: runHealth},
		{name: "restore", section: nodesSection, summary: "seed a new cluster's first node from a backup file", action: runRestore},
	}
}

// accountCommands manages accounts, the stored login and API tokens.
func accountCommands() []*command {
	return []*command{
		{name: "user", section: clientsSection, summary: "accounts and the stored login", subs: []*command{
			{name: "register", summary: "create a user", action: runUserRegister},
			{name: "login", summary: "open a session and store it for later commands", action: runUserLogin},
			{name: "logout", summary: "end the session and forget the stored login", action: runUserLogout},
			{name: "whoami", summary: "print the stored login's username", action: runUserWhoami},
		}},
		{name: "token", section: clientsSection, summary: "personal API tokens for scripts and bots: create, list, revoke", subs: []*command{
			{name: "create", summary: "make a token with a scope, shown once", action: runTokenCreate},
			{name: "list", summary: "your tokens with their scopes, expiry and last use", action: runTokenList},
			{name: "revoke", summary: "revoke a token on every node", action: runTokenRevoke},
		}},
	}
}

// chatCommands are the rooms, search and the terminal chat.
func chatCommands() []*command {
	return []*command{
		{name: "room", section: clientsSection, summary: "chat rooms: create, list, join, leave, members, post, history, moderation", subs: []*command{
			{name: "create", summary: "create a room (public, or private with a password)", action: runRoomCreate},
			{name: "list", summary: "rooms you can see, with members online and unread events", action: runRoomList},
			{name: "join", summary: "become a member of a room", action: runRoomJoin},
			{name: "leave", summary: "stop being a member of a room", action: runRoomLeave},
			{name: "members", summary: "a room's members and who is online", action: runRoomMembers},
			{name: "post", summary: "post a message or a whisper", action: runRoomPost},
			{name: "history", summary: "print a room's events (--follow for new ones)", action: runRoomHistory},
			{name: "delete", summary: "delete a room with its history", action: runRoomDelete},
			{name: "edit", summary: "edit one of your messages", action: runRoomEdit},
			{name: "delete-message", summary: "delete a message (yours, or any as the room's owner or a moderator)", action: runRoomDeleteMessage},
			{name: "react", summary: "react to a message with an emoji (again: take it back)", action: runRoomReact},
			{name: "reply", summary: "reply in a message's thread", action: runRoomReply},
			{name: "thread", summary: "print a message's thread", action: runRoomThread},
			{name: "pin", summary: "pin a message (again: unpin it)", action: runRoomPin},
			{name: "pins", summary: "print a room's pinned messages", action: runRoomPins},
			{name: "mentions", summary: "messages that mention you, across your rooms", action: runRoomMentions},
			{name: "settings", summary: "print or change a room's topic, access, announcement and slow mode, member limit, retention", action: runRoomSettings},
			{name: "legal-hold", summary: "place a room under legal hold or lift it: nothing of its history is deleted (admin)", action: runRoomLegalHold},
			{name: "role", summary: "make a member a moderator or a member again, or transfer the ownership", action: runRoomRole},
			{name: "invite", summary: "invite a user into a private room (no password needed)", action: runRoomInvite},
			{name: "kick", summary: "remove a member from a room", action: runRoomKick},
			{name: "ban", summary: "ban a user from a room, for a while or for good (--lift: unban)", action: runRoomBan},
			{name: "mute", summary: "mute a user in a room for a while (--lift: unmute)", action: runRoomMute},
			{name: "moderation", summary: "a room's bans, mutes, invitations and moderation events", action: runRoomModeration},
			{name: "export", summary: "download a room's history as JSON Lines (owner or admin)", action: runRoomExport},
			{name: "upload", summary: "post a file to a room", action: runRoomUpload},
			{name: "download", summary: "download a file of a room's message", action: runRoomDownload},
			{name: "hook", summary: "incoming webhooks that post as a bot: create, list, revoke", subs: []*command{
				{name: "create", summary: "make a webhook URL that posts to a room, shown once", action: runRoomHookCreate},
				{name: "list", summary: "a room's webhooks", action: runRoomHookList},
				{name: "revoke", summary: "revoke a webhook: its URL stops working", action: runRoomHookRevoke},
			}},
			{name: "outgoing-hook", summary: "outgoing webhooks that POST a room's messages to a URL: create, list, delete, deliveries", subs: []*command{
				{name: "create", summary: "POST a room's messages (or those with a trigger word) to a URL, signed", action: runRoomOutHookCreate},
				{name: "list", summary: "a room's outgoing webhooks", action: runRoomOutHookList},
				{name: "delete", summary: "delete an outgoing webhook and its delivery log", action: runRoomOutHookDelete},
				{name: "deliveries", summary: "an outgoing webhook's recent delivery attempts", action: runRoomOutHookDeliveries},
			}},
		}},
		{name: "search", section: clientsSection, summary: "search the messages you may read: words, \"phrases\", from:USER, in:ROOM", action: runSearch},
		{name: "chat", section: clientsSection, summary: "interactive terminal chat in rooms (/who, /wsp, /join, /rooms, /put, /get, /help)", action: runChat},
	}
}

// dataCommands are the queues, short links and the key-value store.
func dataCommands() []*command {
	return []*command{
		{name: "queue", section: clientsSection, summary: "message queues", subs: []*command{
			{name: "create", summary: "create a queue", action: runQueueCreate},
			{name: "delete", summary: "delete a queue with its messages", action: runQueueDelete},
			{name: "list", summary: "queues, or those with messages waiting for you", action: runQueueList},
			{name: "send", summary: "send a message, to anyone or to one receiver", action: runQueueSend},
			{name: "peek", summary: "show the next message without taking it", action: runQueuePeek},
			{name: "receive", summary: "take the next message (leased with --ack-timeout)", action: runQueueReceive},
			{name: "consume", summary: "follow a queue: write out each message as it arrives, then acknowledge it", action: runQueueConsume},
			{name: "ack", summary: "acknowledge a leased message", action: runQueueAck},
			{name: "nack", summary: "give a leased message back, now, later or to the dead letters", action: runQueueNack},
			{name: "extend", summary: "extend a lease", action: runQueueExtend},
			{name: "send-batch", summary: "send each line of stdin as a message, all or none", action: runQueueSendBatch},
			{name: "configure", summary: "change a queue's dead letters, delivery limit, TTL, max length", action: runQueueConfigure},
			{name: "stats", summary: "a queue's settings and counts", action: runQueueStats},
			{name: "browse", summary: "list a queue's messages (dead letters) without taking them", action: runQueueBrowse},
			{name: "redrive", summary: "move dead letters back to their queues", action: runQueueRedrive},
			{name: "purge", summary: "remove every message of a queue", action: runQueuePurge},
		}},
		{name: "link", section: clientsSection, summary: "short links", subs: []*command{
			{name: "create", summary: "shorten a URL (with expiry, visit limit, status, tags)", action: runLinkCreate},
			{name: "info", summary: "a link's URL, state, creator and hits", action: runLinkInfo},
			{name: "list", summary: "your links with their hits (filter by tag, text, state)", action: runLinkList},
			{name: "edit", summary: "change a link's URL, expiry, visit limit, status or tags", action: runLinkEdit},
			{name: "disable", summary: "stop a link redirecting until enabled", action: runLinkSwitch(true)},
			{name: "enable", summary: "let a disabled link redirect again", action: runLinkSwitch(false)},
			{name: "stats", summary: "a link's visits per day, referrer, browser and OS", action: runLinkStats},
			{name: "qr", summary: "write a QR code of a link (PNG or SVG)", action: runLinkQR},
			{name: "import", summary: "create links from a CSV file, with a per-line report", action: runLinkImport},
			{name: "delete", summary: "delete a link", action: runLinkDelete},
		}},
		{name: "kv", section: clientsSection, summary: "key-value store", subs: []*command{
			{name: "put", summary: "store a value (prints the new version)", action: runKVPut},
			{name: "get", summary: "print a value", action: runKVGet},
			{name: "del", summary: "delete a key", action: runKVDel},
			{name: "list", summary: "list keys", action: runKVList},
			{name: "history", summary: "a key's kept versions with their revisions", action: runKVHistory},
			{name: "txn", summary: "compare, then put, delete or get atomically", action: runKVTxn},
			{name: "watch", summary: "print changes of a key or prefix as they happen", action: runKVWatch},
			{name: "lease", summary: "leases: keys that live while the lease does", subs: []*command{
				{name: "grant", summary: "create a lease and print its id", action: runLeaseGrant},
				{name: "keepalive", summary: "renew a lease (once, or every --every)", action: runLeaseKeepAlive},
				{name: "info", summary: "a lease's TTL and time left", action: runLeaseInfo},
				{name: "revoke", summary: "end a lease, deleting its keys", action: runLeaseRevoke},
			}},
		}},
	}
}

// adminCommands administer the cluster, back it up, and measure it.
func adminCommands() []*command {
	return []*command{
		{name: "cluster", section: clientsSection, summary: "cluster state and administration", subs: []*command{
			{name: "status", summary: "nodes and partitions with leaders, replicas and lag", action: runClusterStatus},
			{name: "drain", summary: "move every replica off a node, following the moves", action: runClusterDrain},
			{name: "remove", summary: "forget a drained or dead node", action: runClusterRemove},
			{name: "verify", summary: "compare replica checksums", action: runClusterVerify},
			{name: "lag", summary: "replica freshness sampled under load", action: runClusterLag},
			{name: "wait", summary: "wait until every partition is fully replicated (--replicated)", action: runClusterWait},
			{name: "token", summary: "join tokens: list, create, revoke, rotate", subs: []*command{
				{name: "list", summary: "join tokens that can still be used", action: runClusterTokenList},
				{name: "create", summary: "make a join token and print it", action: runClusterTokenCreate},
				{name: "revoke", summary: "make a join token unusable", action: runClusterTokenRevoke},
				{name: "rotate", summary: "new join token and gossip key, every other token revoked", action: runClusterTokenRotate},
			}},
		}},
		{name: "backup", section: clientsSection, summary: "write a backup of the cluster to a file (admin only); 'backup verify FILE' checks one", action: runBackup},
		{name: "audit", section: clientsSection, summary: "security audit log of every node (admin only)", action: runAudit},
		{name: "completion", section: clientsSection, summary: "shell completion script: bash, zsh or fish", action: runCompletion},
		{name: "bench", section: clientsSection, summary: "load generators", note: benchNote, subs: []*command{
			{name: "kv", summary: "KV puts and gets against running nodes", action: runBenchKV},
			{name: "fsync", summary: "this disk's fsync latency, the baseline of the targets", action: runBenchFsync},
			{name: "chat-post", summary: "durable room posts", action: runBenchChat},
			{name: "chat-fanout", summary: "post-to-delivery latency with many subscribers", action: runBenchFanout},
			{name: "queue", summary: "durable queue send, leased receive and ack", action: runBenchQueue},
			{name: "queue-delay", summary: "how late delayed queue messages are delivered", action: runBenchQueueDelay},
			{name: "links", summary: "short link creation and redirects", action: runBenchLinks},
		}},
	}
}

// benchNote points from `parley bench` to the peer benchmarks.
const benchNote = `The same workloads against etcd, NATS JetStream and RabbitMQ are the commands
of parley-bench, a binary of their own (go build ./cmd/parley-bench), so
that the server carries none of their clients.`

// run dispatches args under c, whose full name is path.
func (c *command) run(ctx context.Context, e *Env, path string, args []string) error {
	switch {
	case c.subs == nil:
		return c.action(ctx, e, path, args)
	case len(args) == 0:
		return &usageError{path: path, err: fmt.Errorf("%s needs a command: %s", path, c.names()), help: c.help(path)}
	case args[0] == "-h" || args[0] == "--help" || args[0] == "help":
		return &helpError{text: c.help(path)}
	case path == "parley" && (args[0] == "--version" || args[0] == "-version") && len(args) == 1:
		return printVersion(e)
	}
	for _, s := range c.subs {
		if s.name == args[0] {
			return s.run(ctx, e, path+" "+s.name, args[1:])
		}
	}
	return usagef(path, "unknown command %q for %s; want one of %s", args[0], path, c.names())
}

// names lists the subcommands of c.
func (c *command) names() string {
	var ns []string
	for _, s := range c.subs {
		ns = append(ns, s.name)
	}
	return strings.Join(ns, ", ")
}

// help describes a group command and its subcommands.
func (c *command) help(path string) string {
	var b strings.Builder
	if !strings.Contains(path, " ") { // a program's own help
		fmt.Fprintf(&b, "%s\n\n", c.summary)
	}
	fmt.Fprintf(&b, "Usage: %s <command> [arguments]\n", path)
	width := 12 // names line up, however long the longest
	for _, s := range c.subs {
		width = max(width, len(s.name))
	}
	section := "\x00"
	for _, s := range c.subs {
		if s.section != section {
			section = s.section
			heading := section
			if heading == "" {
				heading = "Commands"
			}
			fmt.Fprintf(&b, "\n%s:\n", heading)
		}
		fmt.Fprintf(&b, "  %-*s %s\n", width, s.name, s.summary)
	}
	if c.note != "" {
		fmt.Fprintf(&b, "\n%s\n", c.note)
	}
	fmt.Fprintf(&b, "\nRun '%s <command> -h' for details.\n", path)
	if path == "parley" {
		b.WriteString("'parley --version' prints the version, the commit it was built from and the Go release.\n")
	}
	return b.String()
}
