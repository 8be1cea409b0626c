package chat

import (
	"context"
	"fmt"
	"github.com/parley-chat/parley/internal/compat"
	"time"
	"unicode/utf8"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/text"
)

// Bounds of the room settings and moderation requests, checked by the
// Service.
const (
	MaxTopic       = 256          // bytes
	MaxDescription = 2048         // bytes
	MaxReason      = 512          // bytes
	MaxSlowMode    = 24 * 60 * 60 // seconds
	MaxSanction    = 10 * 365 * 24 * time.Hour
)

// upgradeGate refuses a command new at ModerationProtocol while some node
// of the cluster speaks an older protocol (compat.Require).
func (s *Service) upgradeGate() error {
	return compat.Require(s.cfg.ClusterProtocol, ModerationProtocol, "room roles, invitations, moderation and settings")
}

// SetRole gives target the role (RoleMember, RoleModerator, or RoleOwner
// to transfer the ownership) in room. Only the owner or, with isAdmin, an
// administrator may; target must be a member.
func (s *Service) SetRole(ctx context.Context, user, room, target, role string, isAdmin bool, idempotencyKey string) (ChangeResult, error) {
	if _, ok := roleBytes[role]; !ok {
		return ChangeResult{}, errs.New(errs.Invalid, "role must be %s, %s or %s, got %q", RoleMember, RoleModerator, RoleOwner, clip(role))
	}
	return s.moderate(ctx, user, room, target, idempotencyKey, "set a role in", func(room string) []byte {
		return EncodeSetRole(SetRole{Room: room, User: user, Target: target, Role: role, Admin: isAdmin})
	})
}

// Invite lets target join private room without its password (undo
// withdraws the invitation). The owner, a moderator or, with isAdmin, an
// administrator may.
func (s *Service) Invite(ctx context.Context, user, room, target string, isAdmin, undo bool, idempotencyKey string) (ChangeResult, error) {
	return s.moderate(ctx, user, room, target, idempotencyKey, "invite to", func(room string) []byte {
		return EncodeInvite(Invite{Room: room, User: user, Target: target, Admin: isAdmin, Undo: undo})
	})
}

// ModerateRequest is a kick, ban, unban, mute or unmute.
type ModerateRequest struct {
	Target string
	Action ModAction
	// Duration is how long a ban (0: for good) or a mute (required) lasts.
	Duration time.Duration
	Reason   string
}

// Moderate applies req to its target in room, on behalf of user: the
// owner, a moderator or, with isAdmin, an administrator (errs.Forbidden
// otherwise). A moderator acts on members only; nobody acts on the owner.
func (s *Service) Moderate(ctx context.Context, user, room string, req ModerateRequest, isAdmin bool, idempotencyKey string) (ChangeResult, error) {
	switch {
	case req.Duration < 0 || req.Duration > MaxSanction:
		return ChangeResult{}, errs.New(errs.Invalid, "duration must be between 0 and %v", MaxSanction)
	case req.Action == ActMute && req.Duration < time.Second:
		return ChangeResult{}, errs.New(errs.Invalid, "a mute needs a duration of at least 1 s")
	case req.Duration != 0 && req.Action != ActBan && req.Action != ActMute:
		return ChangeResult{}, errs.New(errs.Invalid, "only bans and mutes take a duration")
	}
	if err := checkFreeText("reason", req.Reason, MaxReason, true); err != nil {
		return ChangeResult{}, err
	}
	return s.moderate(ctx, user, room, req.Target, idempotencyKey, actionVerbs[req.Action]+" in", func(room string) []byte {
		return EncodeModerate(Moderate{Room: room, User: user, Target: req.Target, Action: req.Action,
			DurationMs: uint64(req.Duration.Milliseconds()), Reason: req.Reason, Admin: isAdmin})
	})
}

// moderate runs the checks common to the moderation commands and proposes
// the command encode builds for the canonical room.
func (s *Service) moderate(ctx context.Context, user, room, target, idempotencyKey, verb string, encode func(room string) []byte) (ChangeResult, error) {
	room, dk, err := s.prepare(user, room, idempotencyKey)
	if err != nil {
		return ChangeResult{}, err
	}
	if !ident.ValidUsername(target) {
		return ChangeResult{}, errs.New(errs.Invalid, "username %q is invalid", clip(target))
	}
	if err := s.upgradeGate(); err != nil {
		return ChangeResult{}, err
	}
	res, err := s.propose(ctx, room, dk, encode(room))
	if err != nil {
		return ChangeResult{}, fmt.Errorf("chat: %s %q: %w", verb, room, err)
	}
	return ChangeResult{Seq: res.Seq, Ts: res.Ts}, nil
}

// SettingsRequest changes a room's settings; nil fields stay as they are.
type SettingsRequest struct {
	Topic        *string `json:"topic,omitempty"`
	Description  *string `json:"description,omitempty"`
	Announcement *bool   `json:"announcement,omitempty"`
	// SlowMode is the least time in seconds between two posts of a member
	// (0: off).
	SlowMode   *int `json:"slow_mode,omitempty"`
	MaxMembers *int `json:"max_members,omitempty"`
	// Access is "public", "password" (with Password) or "invite".
	Access   *string `json:"access,omitempty"`
	Password string  `json:"password,omitempty"`
	// RetentionDays and RetentionMessages are the room's own retention:
	// 0 follows the cluster default, -1 (RetentionForever) keeps for ever,
	// otherwise the last that many days and the newest that many messages
	// are kept. For the owner or an admin.
	RetentionDays     *int64 `json:"retention_days,omitempty"`
	RetentionMessages *int64 `json:"retention_messages,omitempty"`
}

// UpdateSettings changes room's settings and returns the room. Topic and
// description may be changed by the owner and moderators, the rest by the
// owner or, with isAdmin, an administrator.
func (s *Service) UpdateSettings(ctx context.Context, user, room string, req SettingsRequest, isAdmin bool, idempotencyKey string) (Room, error) {
	room, dk, err := s.prepare(user, room, idempotencyKey)
	if err != nil {
		return Room{}, err
	}
	cmd, err := s.settingsCommand(ctx, req)
	if err != nil {
		return Room{}, err
	}
	cmd.Room, cmd.User, cmd.Admin = room, user, isAdmin
	if err := s.upgradeGate(); err != nil {
		return Room{}, err
	}
	if cmd.Set&(SetRetentionDays|SetRetentionMessages) != 0 {
		if err := compat.Require(s.cfg.ClusterProtocol, RetentionProtocol, "room retention settings"); err != nil {
			return Room{}, err
		}
	}
	res, err := s.propose(ctx, room, dk, EncodeSettings(cmd))
	if err != nil {
		return Room{}, fmt.Errorf("chat: settings of %q: %w", room, err)
	}
	return *res.Room, nil
}

// settingsCommand checks req and turns it into a Settings command without
// its room and user; a new password is hashed here.
func (s *Service) settingsCommand(ctx context.Context, req SettingsRequest) (Settings, error) {
	var c Settings
	if req.Topic != nil {
		if err := checkFreeText("topic", *req.Topic, MaxTopic, true); err != nil {
			return c, err
		}
		c.Set, c.Topic = c.Set|SetTopic, *req.Topic
	}
	if req.Description != nil {
		if err := checkFreeText("description", *req.Description, MaxDescription, true); err != nil {
			return c, err
		}
		c.Set, c.Description = c.Set|SetDescription, *req.Description
	}
	if req.Announcement != nil {
		c.Set, c.Announcement = c.Set|SetAnnouncement, *req.Announcement
	}
	if req.SlowMode != nil {
		if *req.SlowMode < 0 || *req.SlowMode > MaxSlowMode {
			return c, errs.New(errs.Invalid, "slow_mode must be between 0 and %d seconds", MaxSlowMode)
		}
		c.Set, c.SlowModeSec = c.Set|SetSlowMode, uint64(*req.SlowMode)
	}
	if req.MaxMembers != nil {
		if *req.MaxMembers < 1 || *req.MaxMembers > s.cfg.MaxMembers {
			return c, errs.New(errs.Invalid, "max_members must be between 1 and %d", s.cfg.MaxMembers)
		}
		c.Set, c.MaxMembers = c.Set|SetMaxMembers, uint64(*req.MaxMembers)
	}
	if req.Access != nil {
		c.Set |= SetAccess
		switch *req.Access {
		case "public":
			c.Access = AccessPublic
		case "password":
			c.Access = AccessPassword
		case "invite":
			c.Access = AccessInvite
		default:
			return c, errs.New(errs.Invalid, "access must be public, password or invite, got %q", clip(*req.Access))
		}
	}
	switch {
	case c.Access == AccessPassword && c.Set&SetAccess != 0:
		if req.Password == "" {
			return c, errs.New(errs.Invalid, "password: access password needs one")
		}
		if err := s.checkPassword(req.Password); err != nil {
			return c, err
		}
		hash, err := s.cfg.Hasher.Hash(ctx, req.Password)
		if err != nil {
			return c, err
		}
		c.PasswordHash = hash
	case req.Password != "":
		return c, errs.New(errs.Invalid, "password: give it with access \"password\"")
	}
	if err := retentionRequest(&c, req); err != nil {
		return c, err
	}
	if c.Set == 0 {
		return c, errs.New(errs.Invalid, "no setting to change: give topic, description, announcement, slow_mode, max_members, access, retention_days or retention_messages")
	}
	return c, nil
}

// checkFreeText checks a topic, description or reason: at most maxLen
// bytes of UTF-8 that a message could hold; empty when emptyOK.
func checkFreeText(field, v string, maxLen int, emptyOK bool) error {
	switch {
	case v == "" && emptyOK:
		return nil
	case v == "":
		return errs.New(errs.Invalid, "%s is empty", field)
	case len(v) > maxLen:
		return errs.New(errs.TooLarge, "%s is %d bytes; the limit is %d", field, len(v), maxLen)
	case !utf8.ValidString(v):
		return errs.New(errs.Invalid, "%s is not valid UTF-8", field)
	}
	if err := text.Check(v, text.Lines); err != nil {
		return errs.New(errs.Invalid, "%s: %v", field, err)
	}
	return nil
}

// Moderation returns room's moderation log (see Moderation) for its owner,
// moderators and administrators.
func (s *Service) Moderation(ctx context.Context, user, room string, isAdmin, stale bool) (out ModerationLog, staleMs int64, err error) {
	staleMs, err = s.read(ctx, user, room, stale, "moderation log", func(r state.Reader, room string) error {
		out, err = Moderation(r, room, user, isAdmin, time.Now().UnixMilli())
		return err
	})
	return out, staleMs, err
}
