// Package chat is Parley's rooms domain: the binary commands, the
// deterministic state machine that applies them to one partition's state,
// pure reads over that state, and the Service that turns the room routes of
// the HTTP API into proposals through a state.Replicator that the engine
// implements.
//
// The package uses only the standard library, internal/state, internal/errs
// and golang.org/x/crypto/argon2 (room passwords); it knows nothing about
// Raft, Pebble or HTTP.
//
// # Routing and names
//
// Every room command is routed by the room's canonical name. Room names are
// case-insensitive: CanonicalRoom folds them to ASCII lower case, and that
// spelling is the routing key, the storage key and the name every answer
// carries. Usernames are case-insensitive too (as registration is): member
// keys use the lower-cased name, and each member record keeps the user's own
// spelling, which events and member lists show.
//
// # Key layout
//
// Relative to the partition; all keys start with "c/" (0x00-prefixed keys
// belong to the engine):
//
//	c/<room>/r         room record: owner, private, password hash (argon2id
//	                   PHC), max_members, member count, created_at, last_seq,
//	                   last event time, first_retained_seq, deleted flag and,
//	                   once set, the settings (retention and legal hold too)
//	c/<room>/m/<user>  member record: username as spelled, joined_at, last_read
//	c/<room>/e/<seq>   event, seq as 8 bytes big endian: kind, ts, sender,
//	                   whisper recipients, text
//	c/<room>/o/<id>    outgoing webhook; c/<room>/d/<id><n> its delivery log
//	c/!out/<due>...    the partition's outbox of webhook deliveries
//	                   (outhooks.go, DESIGN.md "Outgoing webhooks")
//	c/<room>/f/<id>    file record: state, owner, size, chunks, message seq,
//	                   name, media type; c/<room>/F/<id><i> its chunks, i 4
//	                   bytes big endian; c/<room>/q the bytes the room's
//	                   files take (files.go, DESIGN.md "Files")
//
// Room names cannot contain '/', so "c/<room>/" holds exactly one room's keys
// and the rooms of a partition are listed by skipping from one such prefix
// to the next (one short scan and one read per room).
//
// # Events and seqs (Guarantee 3)
//
// Apply gives every event of a room the next seq (1, 2, 3...) and the
// leader-stamped time of its command, raised when needed so times never go
// back along the seqs. Posts (messages and whispers), joins and leaves are
// events; joining twice or leaving a room one is not in are no-ops that add
// none. A whisper occupies a seq like any event; Event.ViewFor turns it into
// a hidden event (seq and time only) for members who neither sent nor
// receive it, so every reader sees every seq.
//
// Deleting a room removes its members and marks it deleted; its events stay
// until Compact purges them in bounded batches, and no read returns them. A
// room created again under the same name continues the old seqs, so a seq
// never names two events and a subscriber resuming from an old seq gets
// ErrHistoryCompacted rather than someone else's events.
//
// # Retention (Guarantee 5)
//
// Compact, proposed periodically by the node that leads a partition,
// deletes the events each room's retention expires and records the room's
// first retained seq. A room's retention is the command's (the node's
// --history-retention) unless the room has its own (Settings:
// retention_days, -1 for ever; retention_messages, the newest N messages),
// judged against the command's leader-stamped time, never a clock, with at
// most Budget keys deleted and events counted per command. A room under
// legal hold (LegalHold, admins only) loses nothing: Compact skips it, and
// its messages cannot be edited or deleted nor the room deleted. Asking
// for events after a seq below the first retained one is
// ErrHistoryCompacted (code "history_compacted"; the api package answers
// 410 Gone, the stream layer sends it as its error frame), never a silent
// gap. DESIGN.md says why it is built so.
//
// # Who may do what
//
// Only members post and mark read. Private rooms need the password to join:
// the Service verifies it against the stored hash before proposing and puts
// the hash it verified into the Join command, which Apply compares with the
// room's. History and member lists of a public room are readable by anyone
// signed in (anyone may join it without a password, so reading first reveals
// nothing a join would not, and the room list can preview it); a private
// room's only by its members (CheckRead). Deleting is for the owner or an
// admin.
//
// # Roles and moderation
//
// A room has one owner (its record's), moderators (a role in their member
// records) and members. The owner or an admin grants and revokes the
// moderator role and transfers the ownership (SetRole); the owner and
// moderators invite users into private rooms (Invite), kick, ban (for a
// while or for good) and mute (for a while) users (Moderate), and change the
// settings: moderators the topic and description, the owner the rest
// (announcement rooms, slow mode, max_members, access: public, password or
// invitation-only). Every one of these is a room event with its actor and
// optional reason, listed in the room's moderation log (c/<room>/a/<seq>).
// Apply decides all of it against the command's leader-stamped time: a
// muted member's post, edit, reaction or pin is refused when it is
// applied, a ban or mute ends at
// its command's time plus its duration. These commands are new at
// ModerationProtocol; the Service refuses them with errs.UpgradeInProgress
// until every node of the cluster speaks it (Config.ClusterProtocol). A room
// that uses none of them is stored byte for byte as before.
//
// # Live streams
//
// This package does not stream. The stream layer tails rooms by applied
// index: when a partition applies entries, it reads EventsAfter(last seq
// delivered) for each room with subscribers and fans the events out, viewed
// for each subscriber with Event.ViewFor. Deleting a room is not an event:
// EventsAfter then answers errs.NotFound, which the stream layer forwards as
// its not_found error frame.
//
// # Idempotency
//
// Every write takes an idempotency key; DedupKey makes the engine's dedup key
// from it and the user, as kv does, so a retry returns the first result
// (a retried post its first seq). Results carry the operation that produced
// them, and a key reused for another kind of request is errs.Conflict rather
// than someone else's result.
package chat
