package chat

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
)

// ChangeResult is the answer to a change of a message (edit, delete,
// reaction, pin): the seq and time of the event it appended; Seq is 0 when
// nothing changed (a reaction given twice, a message already pinned or
// deleted).
type ChangeResult struct {
	Seq uint64 `json:"seq"`
	Ts  int64  `json:"ts"`
}

// MentionsPage is a page of the messages that mention a user, in cursor
// order; Next is the cursor of the last one ("" on an empty page), the
// after of the next page.
type MentionsPage struct {
	Mentions []Event `json:"mentions"`
	Next     string  `json:"next"`
}

// notifyParallel bounds the mention inbox proposals of one post in flight.
const notifyParallel = 8

// PostReply is Post for a reply in the thread of message replyTo (a reply to
// a reply joins the same thread: threads are one level deep, as in Slack
// and Mattermost). The parent must be a message user may see and not
// deleted (errs.NotFound, errs.Invalid naming reply_to).
func (s *Service) PostReply(ctx context.Context, user, room, text string, to []string, replyTo uint64, idempotencyKey string) (PostResult, error) {
	return s.post(ctx, user, room, text, to, replyTo, nil, idempotencyKey)
}

// post checks and proposes a post, then notifies the mentioned members'
// inboxes (see notify).
func (s *Service) post(ctx context.Context, user, room, text string, to []string, replyTo uint64, files []string, idempotencyKey string) (PostResult, error) {
	room, dk, err := s.prepare(user, room, idempotencyKey)
	if err != nil {
		return PostResult{}, err
	}
	ids, err := s.postFileIDs(room, files) // service_file.go
	if err != nil {
		return PostResult{}, err
	}
	if len(ids) == 0 || text != "" {
		err = s.checkPost(text, to)
	}
	if err != nil {
		return PostResult{}, err
	}
	mentions := ParseMentions(text)
	cmd := Post{Room: room, User: user, To: to, Text: text, ReplyTo: replyTo, Files: ids,
		Mentions: mentions.Users, MentionRoom: mentions.Room, MentionHere: mentions.Here}
	if mentions.Here {
		if cmd.Here, err = s.onlineMembers(ctx, user, room); err != nil {
			return PostResult{}, fmt.Errorf("chat: post to %q: @here: %w", room, err)
		}
	}
	res, err := s.propose(ctx, room, dk, EncodePost(cmd))
	if err != nil {
		return PostResult{}, fmt.Errorf("chat: post to %q: %w", room, err)
	}
	s.notify(ctx, room, res, dk)
	return PostResult{Seq: res.Seq, Ts: res.Ts, Sender: res.User}, nil
}

// checkPost checks a post's text and recipients.
func (s *Service) checkPost(text string, to []string) error {
	if err := s.checkText(text); err != nil {
		return err
	}
	if len(to) > s.cfg.MaxMembers {
		return errs.New(errs.Invalid, "to: %d recipients; the limit is %d", len(to), s.cfg.MaxMembers)
	}
	for _, t := range to {
		if err := checkRecipient(t); err != nil {
			return err
		}
	}
	return nil
}

// checkText checks a message text: 1 to MaxText bytes of UTF-8 that
// internal/text accepts, not only white space.
func (s *Service) checkText(text string) error {
	switch {
	case text == "":
		return errs.New(errs.Invalid, "text is empty")
	case len(text) > s.cfg.MaxText:
		return errs.New(errs.TooLarge, "text is %d bytes; the limit is %d", len(text), s.cfg.MaxText)
	case !utf8.ValidString(text):
		return errs.New(errs.Invalid, "text is not valid UTF-8")
	}
	return checkMessage(text)
}

// onlineMembers returns the members of room online now (Config.Online over
// a stale read of the members); none without Config.Online.
func (s *Service) onlineMembers(ctx context.Context, user, room string) ([]string, error) {
	if s.cfg.Online == nil {
		return nil, nil
	}
	members, _, err := s.Members(ctx, user, room, true)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = m.Username
	}
	on, err := s.cfg.Online(ctx, names)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if on[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

// notify appends an entry to the mention inbox of every member a post
// mentioned, one proposal per member in the partition of its inbox, a few
// at a time. It is best effort: the mention itself is stored with the
// message (GET /mentions and unread_mentions read it there), the inbox
// entry only carries the live mention frame, so a failure (or a crash
// before it) loses a notification, never a mention. With an idempotency
// key each entry has a dedup key derived from the post's, so a retried post
// notifies once.
func (s *Service) notify(ctx context.Context, room string, res Result, dk string) {
	if len(res.Notified) == 0 || res.Seq == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	sem := make(chan struct{}, notifyParallel)
	var wg sync.WaitGroup
	for i, u := range res.Notified {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			key := ""
			if dk != "" {
				key = dk + "\x00n" + strconv.Itoa(i)
			}
			cmd := EncodeNotify(Notify{Room: room, Sender: res.User, Seq: res.Seq, User: u})
			_, _ = s.proposeTo(ctx, s.r.PartitionOf(InboxName(u)), key, cmd)
		})
	}
	wg.Wait()
}

// Edit replaces the text of message seq of room, for its author only
// (errs.Forbidden otherwise), within Config.EditWindow of its posting
// (errs.Forbidden after it; every edit when EditsOff). The text follows
// Post's rules. The message keeps its seq; an edit event records the change.
func (s *Service) Edit(ctx context.Context, user, room string, seq uint64, text, idempotencyKey string) (ChangeResult, error) {
	room, dk, err := s.prepare(user, room, idempotencyKey)
	if err != nil {
		return ChangeResult{}, err
	}
	if s.cfg.EditsOff {
		return ChangeResult{}, errs.New(errs.Forbidden, "editing messages is disabled on this cluster (--edit-window 0)")
	}
	if err := s.checkText(text); err != nil {
		return ChangeResult{}, err
	}
	cmd := Edit{Room: room, User: user, Seq: seq, Text: text}
	if s.cfg.EditWindow > 0 {
		cmd.Windowed, cmd.WindowMs = true, uint64(s.cfg.EditWindow.Milliseconds())
	}
	return s.change(ctx, room, dk, "edit", EncodeEdit(cmd))
}

// DeleteMessage deletes message seq of room: its author, the room's owner
// or (isAdmin) an administrator may. Its text, mentions and reactions are
// removed from the state of every replica; history keeps a tombstone.
// Deleting a deleted message changes nothing (Seq 0).
func (s *Service) DeleteMessage(ctx context.Context, user, room string, seq uint64, isAdmin bool, idempotencyKey string) (ChangeResult, error) {
	room, dk, err := s.prepare(user, room, idempotencyKey)
	if err != nil {
		return ChangeResult{}, err
	}
	return s.change(ctx, room, dk, "delete", EncodeRemove(Remove{Room: room, User: user, Seq: seq, Admin: isAdmin}))
}

// React adds user's emoji reaction to message seq of room, or with undo
// takes it back (see CheckEmoji). Only members react; giving or taking back
// a reaction twice changes nothing (Seq 0).
func (s *Service) React(ctx context.Context, user, room string, seq uint64, emoji string, undo bool, idempotencyKey string) (ChangeResult, error) {
	room, dk, err := s.prepare(user, room, idempotencyKey)
	if err != nil {
		return ChangeResult{}, err
	}
	if err := CheckEmoji(emoji); err != nil {
		return ChangeResult{}, err
	}
	return s.change(ctx, room, dk, "react to", EncodeReact(React{Room: room, User: user, Seq: seq, Emoji: emoji, Undo: undo}))
}

// Pin pins message seq of room, or with undo unpins it. Any member may;
// whispers cannot be pinned. Pinning a pinned message changes nothing.
func (s *Service) Pin(ctx context.Context, user, room string, seq uint64, undo bool, idempotencyKey string) (ChangeResult, error) {
	room, dk, err := s.prepare(user, room, idempotencyKey)
	if err != nil {
		return ChangeResult{}, err
	}
	return s.change(ctx, room, dk, "pin", EncodePin(Pin{Room: room, User: user, Seq: seq, Undo: undo}))
}

func (s *Service) change(ctx context.Context, room, dk, verb string, cmd []byte) (ChangeResult, error) {
	res, err := s.propose(ctx, room, dk, cmd)
	if err != nil {
		return ChangeResult{}, fmt.Errorf("chat: %s a message of %q: %w", verb, room, err)
	}
	return ChangeResult{Seq: res.Seq, Ts: res.Ts}, nil
}

// read runs fn on one snapshot of room's partition after the usual checks.
func (s *Service) read(ctx context.Context, user, room string, stale bool, what string, fn func(r state.Reader, room string) error) (int64, error) {
	room, err := s.prepareRead(user, room)
	if err != nil {
		return 0, err
	}
	staleMs, err := s.r.Read(ctx, s.r.PartitionOf(room), stale, func(r state.Reader) error { return fn(r, room) })
	if err != nil {
		return 0, fmt.Errorf("chat: %s of %q: %w", what, room, err)
	}
	return staleMs, nil
}

// Message returns event seq of room as user may see it (see Message).
func (s *Service) Message(ctx context.Context, user, room string, seq uint64, stale bool) (out Event, staleMs int64, err error) {
	staleMs, err = s.read(ctx, user, room, stale, "message", func(r state.Reader, room string) error {
		out, err = Message(r, room, user, seq)
		return err
	})
	return out, staleMs, err
}

// Thread returns a page of the thread of message root (see Thread).
func (s *Service) Thread(ctx context.Context, user, room string, root, after uint64, limit int, stale bool) (out ThreadPage, staleMs int64, err error) {
	if _, err := historyLimit(limit); err != nil {
		return ThreadPage{}, 0, err
	}
	staleMs, err = s.read(ctx, user, room, stale, "thread", func(r state.Reader, room string) error {
		out, err = Thread(r, room, user, root, after, limit)
		return err
	})
	return out, staleMs, err
}

// Pins returns room's pinned messages (see Pins).
func (s *Service) Pins(ctx context.Context, user, room string, stale bool) (out []Event, staleMs int64, err error) {
	staleMs, err = s.read(ctx, user, room, stale, "pins", func(r state.Reader, room string) error {
		out, err = Pins(r, room, user)
		return err
	})
	return out, staleMs, err
}

// Mentions returns a page of the messages that mention user in the rooms
// user is a member of, read from every partition concurrently and merged
// (see MentionsOf): the first limit after the cursor after, or without it
// the latest limit (0: DefaultHistoryLimit).
func (s *Service) Mentions(ctx context.Context, user, after string, limit int, stale bool) (MentionsPage, int64, error) {
	if err := checkUser(user); err != nil {
		return MentionsPage{}, 0, err
	}
	limit, err := historyLimit(limit)
	if err != nil {
		return MentionsPage{}, 0, err
	}
	var cur *MentionCursor
	if after != "" {
		c, err := ParseMentionCursor(after)
		if err != nil {
			return MentionsPage{}, 0, err
		}
		cur = &c
	}
	parts := make([][]Event, len(s.r.Partitions()))
	staleMs, err := s.eachPartition(ctx, stale, len(parts), func(i int, r state.Reader) (err error) {
		parts[i], err = MentionsOf(r, user, cur, limit)
		return err
	})
	if err != nil {
		return MentionsPage{}, 0, fmt.Errorf("chat: mentions: %w", err)
	}
	page := MentionsPage{Mentions: PageMentions(slices.Concat(parts...), cur != nil, limit)}
	if page.Mentions == nil {
		page.Mentions = []Event{}
	}
	if n := len(page.Mentions); n > 0 {
		page.Next = cursorOf(page.Mentions[n-1]).String()
	}
	return page, staleMs, nil
}
