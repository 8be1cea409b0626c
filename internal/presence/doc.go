// Package presence is Parley's record of who is online: leases that the node
// holding a user's connections renews, kept in the user's partition. It
// holds the binary commands, the deterministic state machine that applies
// them, and pure reads over a partition's state.
//
// The package uses only the standard library, internal/state and
// internal/errs; it knows nothing about Raft, Pebble, HTTP or connections
// (the node's tracker counts connections and proposes the commands).
//
// # Leases
//
// A lease says "node N holds connections of user U until T". There is one
// lease per (user, node), so a user connected through two nodes has two, and
// the user is online while any of them is unexpired. The holding node
// renews all its users of one partition with one Renew command every few
// seconds (T = the leader-stamped apply time + the command's TTL), and ends
// a user's lease at once with Release when the user's last connection on
// that node closes; another node's lease of the same user is untouched. A
// node that dies stops renewing, so its users go offline when their leases
// run out: within TTL + Grace of its last renewal.
//
// Apply uses only the command and the leader-stamped time (state.Meta); it
// never reads a clock. Reads compare expiry times against the reader's
// clock, allowing Grace for clock skew between the leader that stamped the
// time and the reader. Expired leases are deleted by an Expire command that
// the leader of each partition proposes from time to time; until then reads
// simply skip them.
//
// Presence is not part of any room's seq order: the commands touch only
// presence keys, and nothing about them is ever an event.
package presence
