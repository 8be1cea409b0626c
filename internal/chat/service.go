package chat

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/password"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/wire"
)

// Defaults of Config.
const (
	DefaultMaxText     = 4096 // bytes
	DefaultRoomMembers = 30   // max_members when the creator gives none (the TUM seed's limit)
	DefaultMaxMembers  = 1000 // the highest max_members a creator may ask for
	DefaultMinPassword = 8    // bytes
	DefaultMaxPassword = 256  // bytes
)

// Config bounds what callers may do. Zero fields take the defaults.
type Config struct {
	// MaxText is the longest message text in bytes (4 KiB).
	MaxText int
	// RoomMembers is a new room's max_members when its creator gives none
	// (30).
	RoomMembers int
	// MaxMembers is the highest max_members a creator may ask for (1000).
	MaxMembers int
	// MinPassword and MaxPassword bound private room passwords in bytes
	// (8 and 256).
	MinPassword, MaxPassword int
	// EditWindow is how long after posting a message its author may edit
	// it: 0 (the default) is no limit. EditsOff refuses every edit (the
	// node's --edit-window 0).
	EditWindow time.Duration
	EditsOff   bool
	// Online reports which of the given users are online, keyed by the
	// names given (the presence tracker's Online); @here mentions those
	// members. Nil: @here mentions nobody.
	Online func(ctx context.Context, users []string) (map[string]bool, error)
	// Hasher hashes and verifies room passwords, bounding how many run at
	// once. Give every service of a node the same Hasher so that the bound is
	// the node's. Nil: NewService builds one with password.DefaultParams and
	// the default concurrency.
	Hasher *password.Hasher
	// ClusterProtocol returns the internal protocol every node of the
	// cluster speaks (compat.ClusterProtocol). Commands new at
	// ModerationProtocol or HookProtocol are refused with
	// errs.UpgradeInProgress while it is lower (compat.Require). Nil: every
	// node speaks this build's protocol.
	ClusterProtocol func() int
	// MaxFileSize is the largest file an upload may carry in bytes
	// (DefaultMaxFileSize); RoomFileQuota the most bytes of files one room
	// stores (DefaultRoomFileQuota): the node's --max-file-size and
	// --room-file-quota.
	MaxFileSize, RoomFileQuota int64
	// CheckHookURL decides whether an outgoing webhook may point at a URL
	// of a valid form (CheckHookURL): the node's refusal of private
	// addresses (internal/webhook). Nil refuses every outgoing webhook.
	CheckHookURL func(ctx context.Context, rawURL string) error
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config { return Config{}.withDefaults() }

func (c Config) withDefaults() Config {
	if c.MaxText <= 0 {
		c.MaxText = DefaultMaxText
	}
	if c.MaxMembers <= 0 {
		c.MaxMembers = DefaultMaxMembers
	}
	if c.RoomMembers <= 0 {
		c.RoomMembers = min(DefaultRoomMembers, c.MaxMembers)
	}
	if c.MinPassword <= 0 {
		c.MinPassword = DefaultMinPassword
	}
	if c.MaxPassword <= 0 {
		c.MaxPassword = DefaultMaxPassword
	}
	if c.MaxFileSize <= 0 {
		c.MaxFileSize = DefaultMaxFileSize
	}
	if c.RoomFileQuota <= 0 {
		c.RoomFileQuota = DefaultRoomFileQuota
	}
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.RoomMembers > c.MaxMembers:
		return fmt.Errorf("chat: default room size %d exceeds the member cap %d", c.RoomMembers, c.MaxMembers)
	case c.MinPassword > c.MaxPassword:
		return fmt.Errorf("chat: minimum password length %d exceeds the maximum %d", c.MinPassword, c.MaxPassword)
	case c.MaxFileSize > c.RoomFileQuota:
		return fmt.Errorf("chat: the largest file, %d bytes, exceeds the room file quota of %d bytes", c.MaxFileSize, c.RoomFileQuota)
	}
	return nil
}

// Service turns chat API calls into proposals and reads. It is safe for
// concurrent use. Every method takes the signed-in user's name; an empty one
// is errs.Unauthorized. Room names are folded to lower case (see
// CanonicalRoom).
type Service struct {
	r   state.Replicator
	cfg Config
}

// NewService returns a Service that replicates through r within cfg.
// Without Config.Hasher, building it hashes one random password.
func NewService(r state.Replicator, cfg Config) *Service {
	cfg = cfg.withDefaults()
	if cfg.Hasher == nil {
		h, err := password.NewHasher(password.DefaultParams(), 0)
		if err != nil {
			panic(err) // the default parameters are valid
		}
		cfg.Hasher = h
	}
	return &Service{r: r, cfg: cfg}
}

// Config returns the configuration in force, defaults filled in.
func (s *Service) Config() Config { return s.cfg }

// CreateRequest is the body of a room creation.
type CreateRequest struct {
	Name     string `json:"name"`
	Private  bool   `json:"private"`
	Password string `json:"password,omitempty"`
	// InviteOnly makes a private room without a password: only invited
	// users join it.
	InviteOnly bool `json:"invite_only,omitempty"`
	// MaxMembers 0 means Config.RoomMembers.
	MaxMembers int `json:"max_members,omitempty"`
}

// PostResult is the answer to a post.
type PostResult struct {
	Seq    uint64 `json:"seq"`
	Ts     int64  `json:"ts"`
	Sender string `json:"sender"`
}

// CompactResult is the answer to a compaction.
type CompactResult struct {
	// Deleted is the number of events removed.
	Deleted uint64
	// More says the budget ran out: propose again soon.
	More bool
}

// Create creates a room owned by user, who becomes its first member (a join
// event, seq 1 for a new name). A private room needs a password, hashed here
// before proposing; a public room takes none. A name in use is errs.Conflict.
func (s *Service) Create(ctx context.Context, user string, req CreateRequest, idempotencyKey string) (Room, error) {
	if err := checkUser(user); err != nil {
		return Room{}, err
	}
	room, err := CanonicalRoom(req.Name)
	if err != nil {
		return Room{}, err
	}
	members := req.MaxMembers
	if members == 0 {
		members = s.cfg.RoomMembers
	}
	if members < 1 || members > s.cfg.MaxMembers {
		return Room{}, errs.New(errs.Invalid, "max_members must be between 1 and %d", s.cfg.MaxMembers)
	}
	dk, err := dedupKeyFor(user, idempotencyKey)
	if err != nil {
		return Room{}, err
	}
	cmd := CreateRoom{Room: room, Owner: user, Private: req.Private || req.InviteOnly, InviteOnly: req.InviteOnly, MaxMembers: uint64(members)}
	switch {
	case req.InviteOnly && req.Password != "":
		return Room{}, errs.New(errs.Invalid, "password: an invitation-only room takes none")
	case req.InviteOnly:
		if err := s.upgradeGate(); err != nil {
			return Room{}, err
		}
	case req.Private && req.Password == "":
		return Room{}, errs.New(errs.Invalid, "password: a private room needs one")
	case !req.Private && req.Password != "":
		return Room{}, errs.New(errs.Invalid, "password: only private rooms take one")
	case req.Private:
		if err := s.checkPassword(req.Password); err != nil {
			return Room{}, err
		}
		if cmd.PasswordHash, err = s.cfg.Hasher.Hash(ctx, req.Password); err != nil {
			return Room{}, err
		}
	}
	res, err := s.propose(ctx, room, dk, EncodeCreateRoom(cmd))
	if err != nil {
		return Room{}, fmt.Errorf("chat: create %q: %w", room, err)
	}
	return *res.Room, nil
}

// Delete deletes a room: its owner or, with isAdmin, an administrator may.
// Its members are removed and its history becomes unreadable; the name can be
// used again, and the new room's seqs continue after the old one's.
func (s *Service) Delete(ctx context.Context, user, room string, isAdmin bool, idempotencyKey string) error {
	room, dk, err := s.prepare(user, room, idempotencyKey)
	if err != nil {
		return err
	}
	if _, err := s.propose(ctx, room, dk, EncodeDeleteRoom(DeleteRoom{Room: room, User: user, Admin: isAdmin})); err != nil {
		return fmt.Errorf("chat: delete %q: %w", room, err)
	}
	return nil
}

// Join makes user a member of room and returns the room. A private room needs
// its password (errs.Forbidden when missing or wrong), verified here against
// the stored hash before proposing; a full room is errs.Conflict. Joining a
// room one is a member of changes nothing and returns the room.
func (s *Service) Join(ctx context.Context, user, room, password, idempotencyKey string) (Room, error) {
	room, dk, err := s.prepare(user, room, idempotencyKey)
	if err != nil {
		return Room{}, err
	}
	var private, member, invited bool
	var hash string
	var refusal []byte
	p := s.r.PartitionOf(room)
	if _, err := s.r.Read(ctx, p, false, func(r state.Reader) error {
		rec, err := liveRoom(r, room)
		if err != nil {
			return err
		}
		private, hash = rec.private, rec.passwordHash
		if _, member, err = getMember(r, room, user); err != nil || member {
			return err
		}
		refusal, invited, err = joinRules(r, room, user, time.Now().UnixMilli())
		return err
	}); err != nil {
		return Room{}, fmt.Errorf("chat: join %q: %w", room, err)
	}
	if refusal != nil {
		_, err := DecodeResult(refusal)
		return Room{}, err
	}
	cmd := Join{Room: room, User: user}
	if private && !member && !invited && hash == "" {
		return Room{}, errs.New(errs.Forbidden, "room %q is invitation-only: ask its owner or a moderator for an invitation", room)
	}
	if private && !member && !invited {
		if password == "" {
			return Room{}, errs.New(errs.Forbidden, "room %q is private: a password is needed to join", room)
		}
		if len(password) > s.cfg.MaxPassword {
			return Room{}, errs.New(errs.Forbidden, "wrong password for room %q", room)
		}
		ok, err := s.cfg.Hasher.Verify(ctx, hash, password)
		if err != nil {
			return Room{}, fmt.Errorf("chat: join %q: %w", room, err)
		}
		if !ok {
			return Room{}, errs.New(errs.Forbidden, "wrong password for room %q", room)
		}
		cmd.PasswordHash = hash
	}
	res, err := s.proposeTo(ctx, p, dk, EncodeJoin(cmd))
	if err != nil {
		return Room{}, fmt.Errorf("chat: join %q: %w", room, err)
	}
	return *res.Room, nil
}

// Leave removes user from room's members; leaving a room one is not a member
// of changes nothing.
func (s *Service) Leave(ctx context.Context, user, room, idempotencyKey string) error {
	room, dk, err := s.prepare(user, room, idempotencyKey)
	if err != nil {
		return err
	}
	if _, err := s.propose(ctx, room, dk, EncodeLeave(Leave{Room: room, User: user})); err != nil {
		return fmt.Errorf("chat: leave %q: %w", room, err)
	}
	return nil
}

// MarkRead raises user's read marker in room to seq (capped at the room's
// last seq; a marker never goes back) and returns the marker. Only members
// have one (errs.Forbidden otherwise). Joining sets it to the join's seq and
// posting to the post's, so one's own events never count as unread.
func (s *Service) MarkRead(ctx context.Context, user, room string, seq uint64, idempotencyKey string) (uint64, error) {
	room, dk, err := s.prepare(user, room, idempotencyKey)
	if err != nil {
		return 0, err
	}
	res, err := s.propose(ctx, room, dk, EncodeMarkRead(MarkRead{Room: room, User: user, Seq: seq}))
	if err != nil {
		return 0, fmt.Errorf("chat: mark read in %q: %w", room, err)
	}
	return res.N, nil
}

// Post appends a message by user to room; a non-empty to makes it a whisper
// to those members (each must be a member: errs.Invalid naming "to"). Only
// members post (errs.Forbidden). The text must be 1 to Config.MaxText bytes of
// UTF-8, not only white space, without control characters other than newline
// and tab and without bidirectional overrides or isolates (internal/text; the
// errs.Invalid names the character). A retry with the same idempotency key
// returns the first result.
func (s *Service) Post(ctx context.Context, user, room, text string, to []string, idempotencyKey string) (PostResult, error) {
	return s.post(ctx, user, room, text, to, 0, nil, idempotencyKey)
}

// Room returns a room user may read (see CheckRead).
func (s *Service) Room(ctx context.Context, user, room string, stale bool) (out Room, staleMs int64, err error) {
	room, err = s.prepareRead(user, room)
	if err != nil {
		return Room{}, 0, err
	}
	staleMs, err = s.r.Read(ctx, s.r.PartitionOf(room), stale, func(r state.Reader) error {
		out, err = CheckRead(r, room, user)
		return err
	})
	if err != nil {
		return Room{}, 0, fmt.Errorf("chat: room %q: %w", room, err)
	}
	return out, staleMs, nil
}

// Members returns the members of a room user may read (see CheckRead).
func (s *Service) Members(ctx context.Context, user, room string, stale bool) (members []Member, staleMs int64, err error) {
	room, err = s.prepareRead(user, room)
	if err != nil {
		return nil, 0, err
	}
	staleMs, err = s.r.Read(ctx, s.r.PartitionOf(room), stale, func(r state.Reader) error {
		if _, err := checkRead(r, room, user); err != nil {
			return err
		}
		members, err = Members(r, room)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("chat: members of %q: %w", room, err)
	}
	return members, staleMs, nil
}

// History returns a page of a room's history as user may see it (see
// History and HistoryQuery).
func (s *Service) History(ctx context.Context, user, room string, q HistoryQuery, stale bool) (events []Event, staleMs int64, err error) {
	room, err = s.prepareRead(user, room)
	if err != nil {
		return nil, 0, err
	}
	if _, err := historyLimit(q.Limit); err != nil {
		return nil, 0, err
	}
	staleMs, err = s.r.Read(ctx, s.r.PartitionOf(room), stale, func(r state.Reader) error {
		events, err = History(r, room, user, q)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("chat: history of %q: %w", room, err)
	}
	return events, staleMs, nil
}

// List returns the rooms visible to user (public ones and private ones user
// is a member of) from every partition, read concurrently, in name order;
// staleMs is the largest staleness among them.
func (s *Service) List(ctx context.Context, user string, stale bool) ([]RoomSummary, int64, error) {
	if err := checkUser(user); err != nil {
		return nil, 0, err
	}
	parts := make([][]RoomSummary, len(s.r.Partitions()))
	staleMs, err := s.eachPartition(ctx, stale, len(parts), func(i int, r state.Reader) (err error) {
		parts[i], err = ListRooms(r, user)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("chat: list rooms: %w", err)
	}
	rooms := slices.Concat(parts...)
	slices.SortFunc(rooms, func(a, b RoomSummary) int { return strings.Compare(a.Name, b.Name) })
	return rooms, staleMs, nil
}

// eachPartition runs fn on the state of each of the first n partitions
// (Partitions()), concurrently, with the partition's index (fn may run more
// than once for one index: it must assign, not append), and returns the
// largest staleness; the first failure cancels the others and is returned.
func (s *Service) eachPartition(ctx context.Context, stale bool, n int, fn func(i int, r state.Reader) error) (int64, error) {
	parts := s.r.Partitions()[:n]
	type partResult struct {
		staleMs int64
		err     error
	}
	results := make([]partResult, len(parts))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Go(func() {
			res := &results[i]
			res.staleMs, res.err = s.r.Read(ctx, p, stale, func(r state.Reader) error { return fn(i, r) })
			if res.err != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	var firstErr error
	var staleMs int64
	for _, r := range results {
		if r.err != nil && (firstErr == nil || errors.Is(firstErr, context.Canceled)) {
			firstErr = r.err
		}
		staleMs = max(staleMs, r.staleMs)
	}
	return staleMs, firstErr
}

// Compact runs one retention pass over partition p: events older than
// retention are removed (0 keeps them forever) and what is left of deleted
// rooms' events is purged, at most budget events (0: DefaultCompactBudget).
// The node that owns p proposes it periodically and again at once while
// More is set.
func (s *Service) Compact(ctx context.Context, p uint64, retention time.Duration, budget int) (CompactResult, error) {
	if retention < 0 || budget < 0 {
		return CompactResult{}, errs.New(errs.Invalid, "retention and budget must not be negative")
	}
	cmd := Compact{RetentionMs: uint64(retention.Milliseconds()), Budget: uint64(budget)}
	res, err := s.proposeTo(ctx, p, "", EncodeCompact(cmd))
	if err != nil {
		return CompactResult{}, fmt.Errorf("chat: compact partition %d: %w", p, err)
	}
	return CompactResult{Deleted: res.N, More: res.More}, nil
}

// prepare checks the user, folds the room name and builds the dedup key of a
// write.
func (s *Service) prepare(user, room, idempotencyKey string) (string, string, error) {
	room, err := s.prepareRead(user, room)
	if err != nil {
		return "", "", err
	}
	dk, err := dedupKeyFor(user, idempotencyKey)
	return room, dk, err
}

func (s *Service) prepareRead(user, room string) (string, error) {
	if err := checkUser(user); err != nil {
		return "", err
	}
	return CanonicalRoom(room)
}

func (s *Service) propose(ctx context.Context, room, dk string, cmd []byte) (Result, error) {
	return s.proposeTo(ctx, s.r.PartitionOf(room), dk, cmd)
}

// proposeTo proposes cmd in partition p and decodes the result. A result of
// another kind of command can only come from the dedup table: the caller
// reused an idempotency key for a different request.
func (s *Service) proposeTo(ctx context.Context, p uint64, dk string, cmd []byte) (Result, error) {
	res, err := s.r.Propose(ctx, p, dk, cmd)
	if err != nil {
		return Result{}, err
	}
	r, err := DecodeResult(res)
	if err != nil {
		return Result{}, err
	}
	if r.op != cmd[1] || (r.Room == nil && (cmd[1] == opCreate || cmd[1] == opJoin || cmd[1] == opLeave || cmd[1] == opSettings || cmd[1] == opLegalHold)) {
		return Result{}, errs.New(errs.Conflict, "the idempotency key was already used for a different request")
	}
	return r, nil
}

func (s *Service) checkPassword(pw string) error {
	switch {
	case len(pw) < s.cfg.MinPassword:
		return errs.New(errs.Invalid, "password must be at least %d bytes", s.cfg.MinPassword)
	case len(pw) > s.cfg.MaxPassword:
		return errs.New(errs.TooLarge, "password is %d bytes; the limit is %d", len(pw), s.cfg.MaxPassword)
	}
	return nil
}

// checkUser rejects a missing or malformed signed-in username.
func checkUser(user string) error {
	switch {
	case user == "":
		return errs.New(errs.Unauthorized, "sign in to use rooms")
	case !ident.ValidUsername(user):
		return errs.New(errs.Invalid, "username %q is invalid", clip(user))
	}
	return nil
}

// DedupKey returns the replication dedup key for a user's idempotency key:
// Tag, uvarint len(user), user, idempotencyKey; "" when idempotencyKey is
// empty. The tag keeps chat retries apart from other domains' in the same
// partition, the length prefix keeps ("ab","c") apart from ("a","bc").
// Usernames are case-insensitive, so the user is folded.
func DedupKey(user, idempotencyKey string) string {
	return wire.NewDedupKey(idempotencyKey, Tag).String(ident.Fold(user)).Raw(idempotencyKey).Done()
}

func dedupKeyFor(user, idempotencyKey string) (string, error) {
	if err := wire.CheckIdempotencyKey(idempotencyKey); err != nil {
		return "", err
	}
	return DedupKey(user, idempotencyKey), nil
}
