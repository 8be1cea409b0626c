package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// RoomSettings changes a room's settings; nil fields stay as they are.
// Topic and Description may be changed by the owner and moderators, the
// rest by the owner or an admin.
type RoomSettings struct {
	Topic        *string `json:"topic,omitempty"`
	Description  *string `json:"description,omitempty"`
	Announcement *bool   `json:"announcement,omitempty"`
	// SlowMode is the least seconds between two posts of a member (0: off).
	SlowMode   *int `json:"slow_mode,omitempty"`
	MaxMembers *int `json:"max_members,omitempty"`
	// Access is "public", "password" (with Password) or "invite".
	Access   *string `json:"access,omitempty"`
	Password string  `json:"password,omitempty"`
	// RetentionDays is the room's own retention by age (0: the cluster's,
	// -1: for ever); RetentionMessages keeps the newest that many messages
	// (0 or -1: no limit).
	RetentionDays     *int64 `json:"retention_days,omitempty"`
	RetentionMessages *int64 `json:"retention_messages,omitempty"`
}

// Sanction is a ban, mute or invitation in force.
type Sanction struct {
	User   string `json:"user"`
	By     string `json:"by"`
	At     int64  `json:"at"`              // Unix ms
	Until  int64  `json:"until,omitempty"` // Unix ms; 0: for good
	Reason string `json:"reason,omitempty"`
}

// ModerationLog is a room's bans, mutes and invitations in force and its
// latest moderation events.
type ModerationLog struct {
	Bans    []Sanction `json:"bans"`
	Mutes   []Sanction `json:"mutes"`
	Invites []Sanction `json:"invites"`
	Events  []Event    `json:"events"`
}

// SanctionOptions qualify Moderate: a duration (bans: 0 is for good; mutes
// need one) and an optional reason.
type SanctionOptions struct {
	Duration time.Duration
	Reason   string
}

// GetRoom returns a room with its settings.
func (c *Client) GetRoom(ctx context.Context, room string) (Room, error) {
	var r Room
	_, err := c.sendJSON(ctx, http.MethodGet, roomPath(room, ""), nil, &r)
	return r, err
}

// UpdateRoomSettings changes a room's settings and returns the room.
func (c *Client) UpdateRoomSettings(ctx context.Context, room string, s RoomSettings) (Room, error) {
	var r Room
	_, err := c.sendJSON(ctx, http.MethodPatch, roomPath(room, ""), s, &r)
	return r, err
}

// SetRole gives a member the role "moderator" or "member", or with
// "owner" transfers the room's ownership (the owner or an admin may).
func (c *Client) SetRole(ctx context.Context, room, user, role string) (ChangeResult, error) {
	var r ChangeResult
	body := struct {
		Role string `json:"role"`
	}{role}
	_, err := c.sendJSON(ctx, http.MethodPut, memberPath(room, user, "/role"), body, &r)
	return r, err
}

// Invite lets user join a private room without its password.
func (c *Client) Invite(ctx context.Context, room, user string) (ChangeResult, error) {
	var r ChangeResult
	body := struct {
		Username string `json:"username"`
	}{user}
	_, err := c.sendJSON(ctx, http.MethodPost, roomPath(room, "/invites"), body, &r)
	return r, err
}

// Uninvite withdraws user's invitation.
func (c *Client) Uninvite(ctx context.Context, room, user string) (ChangeResult, error) {
	var r ChangeResult
	_, err := c.sendJSON(ctx, http.MethodDelete, roomPath(room, "/invites/"+url.PathEscape(user)), nil, &r)
	return r, err
}

// Moderate kicks ("kick"), bans ("ban"), unbans ("unban"), mutes ("mute")
// or unmutes ("unmute") user in a room.
func (c *Client) Moderate(ctx context.Context, room, user, action string, o SanctionOptions) (ChangeResult, error) {
	method, suffix := http.MethodPost, "/"+action
	switch action {
	case "unban":
		method, suffix = http.MethodDelete, "/ban"
	case "unmute":
		method, suffix = http.MethodDelete, "/mute"
	}
	body := struct {
		Duration int64  `json:"duration,omitempty"`
		Reason   string `json:"reason,omitempty"`
	}{int64(o.Duration / time.Second), o.Reason}
	var r ChangeResult
	_, err := c.sendJSON(ctx, method, memberPath(room, user, suffix), body, &r)
	return r, err
}

// Moderation returns a room's moderation log (its owner, moderators and
// admins may read it).
func (c *Client) Moderation(ctx context.Context, room string) (ModerationLog, error) {
	var l ModerationLog
	_, err := c.sendJSON(ctx, http.MethodGet, roomPath(room, "/moderation"), nil, &l)
	return l, err
}

// SetLegalHold places a room under legal hold, or with lift lifts it, and
// returns the room (admins only). While held nothing of its history is
// deleted.
func (c *Client) SetLegalHold(ctx context.Context, room string, lift bool) (Room, error) {
	method := http.MethodPut
	if lift {
		method = http.MethodDelete
	}
	var r Room
	_, err := c.sendJSON(ctx, method, roomPath(room, "/legal-hold"), nil, &r)
	return r, err
}

func memberPath(room, user, suffix string) string {
	return roomPath(room, "/members/"+url.PathEscape(user)+suffix)
}
