package chat_test

import (
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/password/passwordtest"
	"github.com/parley-chat/parley/internal/state/statetest"
)

func int64p(v int64) *int64 { return &v }

// Retention settings and legal holds wait until every node speaks
// RetentionProtocol; out-of-range values and non-admins are refused before
// proposing.
func TestService_RetentionAndLegalHold(t *testing.T) {
	protocol := 1
	r := statetest.NewReplicator(1, chat.StateMachine{})
	s := chat.NewService(r, chat.Config{Hasher: passwordtest.Hasher(), ClusterProtocol: func() int { return protocol }})
	mustCreate(t, s, "alice", chat.CreateRequest{Name: "ops"})
	_, err := s.UpdateSettings(ctx, "alice", "ops", chat.SettingsRequest{RetentionDays: int64p(3)}, false, "")
	wantCode(t, err, errs.UpgradeInProgress)
	_, err = s.SetLegalHold(ctx, "root", "ops", false, true, "")
	wantCode(t, err, errs.UpgradeInProgress)

	protocol = chat.RetentionProtocol
	for _, req := range []chat.SettingsRequest{
		{RetentionDays: int64p(-2)},
		{RetentionDays: int64p(chat.MaxRetentionDays + 1)},
		{RetentionMessages: int64p(-5)},
	} {
		_, err := s.UpdateSettings(ctx, "alice", "ops", req, false, "")
		wantCode(t, err, errs.Invalid)
	}
	room, err := s.UpdateSettings(ctx, "alice", "ops", chat.SettingsRequest{RetentionDays: int64p(chat.RetentionForever), RetentionMessages: int64p(2)}, false, "")
	if err != nil || room.RetentionDays != -1 || room.RetentionMessages != 2 {
		t.Fatalf("settings = %+v, %v", room, err)
	}
	_, err = s.SetLegalHold(ctx, "alice", "ops", false, false, "")
	wantCode(t, err, errs.Forbidden)
	room, err = s.SetLegalHold(ctx, "root", "ops", false, true, "")
	if err != nil || !room.LegalHold {
		t.Fatalf("hold = %+v, %v", room, err)
	}
	for range 4 {
		if _, err := s.Post(ctx, "alice", "ops", "kept", nil, ""); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := s.Compact(ctx, r.PartitionOf("ops"), time.Millisecond, 0); err != nil || res.Deleted != 0 {
		t.Fatalf("compact under hold = %+v, %v", res, err)
	}
	wantCode(t, s.Delete(ctx, "alice", "ops", false, ""), errs.Conflict)
	room, err = s.SetLegalHold(ctx, "root", "ops", true, true, "")
	if err != nil || room.LegalHold {
		t.Fatalf("lift = %+v, %v", room, err)
	}
	if res, err := s.Compact(ctx, r.PartitionOf("ops"), 0, 0); err != nil || res.Deleted == 0 {
		t.Fatalf("compact after the hold = %+v, %v", res, err)
	}
	got, _, err := s.Room(ctx, "alice", "ops", false)
	if err != nil || got.FirstRetainedSeq <= 1 {
		t.Fatalf("room %+v, %v: want the count to have removed the oldest", got, err)
	}
}
