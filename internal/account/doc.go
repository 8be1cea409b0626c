// Package account holds Parley's users, sessions and personal API tokens: the binary commands, the
// deterministic state machine that applies them to one partition's state,
// pure reads over that state, password hashing, and the Service that turns
// API calls (register, login, logout, authenticate) into proposals through a
// state.Replicator that the engine implements.
//
// The package uses only the standard library, golang.org/x/crypto/argon2,
// internal/state and internal/errs; it knows nothing about Raft, Pebble or
// HTTP.
//
// # Placement
//
// A user's record and all its sessions live in the partition of the user's
// lowercased name, so usernames are unique case-insensitively cluster-wide
// with no global index. A session token is "<lowercased name>.<random>", so
// any node finds the partition that owns a token from the token alone. Tokens
// are stored only as their SHA-256 digest.
//
// # The first user is admin
//
// The admin seat is one record, "a/admin", in the partition of the fixed
// routing key AdminClaimRoutingKey. It holds the lowercased name it was
// granted to and, once written, never changes. Register runs in this order:
//
//  1. Read the claim (linearizable). Registration closed and the seat held by
//     another name: 403 before any hashing.
//  2. Hash the password (outside Apply, bounded by a semaphore).
//  3. If the seat is free, propose ClaimAdmin{name} to the claim partition.
//     Apply grants it when the seat is free or already held by the same
//     name, so the first claim wins and a retry of the winner wins again.
//  4. Propose CreateUser{name, hash, admin: holder == name} to the user's
//     partition; 409 when the name is taken.
//
// Invariant: a user record exists only after the seat was seen held (step 1
// or 3 completed before step 4), and the seat never changes; so every user
// named N was created with admin == (holder == N). In particular a second
// registration of the admin's name conflicts, and no other name can ever be
// created as admin.
//
// If the node dies (or the call times out, or the create is refused) between
// steps 3 and 4, the seat names N but no user N exists. That is harmless:
// nobody else can become admin, and the seat waits for its name. Registering
// N again (the original client's retry, with or without an idempotency key)
// finds the seat held by N and creates N as admin; with registration closed,
// N is the one name still allowed to register without an admin, so an
// operator can always finish the bootstrap. A claim is never released:
// releasing it safely would need the two partitions to agree atomically that
// no N exists, and a concurrent registration of N could slip in between and
// leave two admins. The cost of never releasing is that, until N registers,
// the cluster has no admin.
//
// # Sessions and revocation
//
// Login reads the user record, verifies the password outside Apply in
// constant time, then proposes CreateSession with the token's digest;
// Apply stamps the expiry from the leader's time. Logout deletes the session.
// Authenticate (and Session, which also tells when the session ends) reads
// the session linearizably, or from a node-local session cache whose
// entries live at most CacheTTL (500 ms by default) counted from the start
// of the read that filled them: a token revoked by a Logout that has
// returned stops working on every node within CacheTTL. Open streams
// recheck their tokens through Session (internal/api, stream.Guard).
// Expired sessions are refused at once and purged a few at a time by later
// commands of the same partition.
//
// # Personal API tokens
//
// A personal API token ("pat_<lowercased name>.<random>", scope.go,
// token.go) is a credential of its own for scripts and bots: stored, like a
// session, only as its digest in its owner's partition, with an id, a name,
// scopes (read, write or admin, each optionally narrowed to one room or
// queue) and an expiry (90 days by default, at most a year). Session
// answers for it as for a session, through the same cache, so a revocation
// (RevokeToken) is seen on every node within CacheTTL; the caller
// (internal/api) enforces the scopes. A token's last use is noted in
// memory by every Session and written by FlushTokenUses in one TouchTokens
// command per partition (RunTokenUseFlusher, once a minute), never a Raft
// write per request. The token commands are new at TokenProtocol: the
// Service refuses them (errs.UpgradeInProgress) while Config.ClusterProtocol
// says some node runs an older build.
package account
