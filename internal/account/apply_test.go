package account

import (
	"bytes"
	"testing"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
)

// applyStep is one command of a TestStateMachine_Apply case, applied at
// leader time atMs, and a check of its result.
type applyStep struct {
	atMs  int64
	cmd   []byte
	check func(t *testing.T, res []byte)
}

func wantUser(name string, admin bool, createdMs int64) func(*testing.T, []byte) {
	return func(t *testing.T, res []byte) {
		t.Helper()
		u, err := decodeUserResult(res)
		if err != nil || u.name != name || u.admin != admin || u.createdMs != createdMs {
			t.Fatalf("create user = (%+v, %v), want %s admin=%v at %d", u, err, name, admin, createdMs)
		}
	}
}

func wantHolder(holder string) func(*testing.T, []byte) {
	return func(t *testing.T, res []byte) {
		t.Helper()
		if h, err := decodeClaimResult(res); err != nil || h != holder {
			t.Fatalf("claim = (%q, %v), want %q", h, err, holder)
		}
	}
}

func wantSession(name string, admin bool, expiresMs int64) func(*testing.T, []byte) {
	return func(t *testing.T, res []byte) {
		t.Helper()
		n, a, exp, err := decodeSessionResult(res)
		if err != nil || n != name || a != admin || exp != expiresMs {
			t.Fatalf("create session = (%q, %v, %d, %v), want %q %v %d", n, a, exp, err, name, admin, expiresMs)
		}
	}
}

func wantCodeOf(decode func([]byte) error, code errs.Code) func(*testing.T, []byte) {
	return func(t *testing.T, res []byte) {
		t.Helper()
		if got := errs.CodeOf(decode(res)); got != code {
			t.Fatalf("result % x decodes to code %q, want %q", res, got, code)
		}
	}
}

func userErr(res []byte) error { _, err := decodeUserResult(res); return err }
func sessionErr(res []byte) error {
	_, _, _, err := decodeSessionResult(res)
	return err
}

func TestStateMachine_Apply(t *testing.T) {
	d1, d2 := digestOf(1), digestOf(2)
	user := func(name string, admin bool) []byte {
		return EncodeCreateUser(CreateUser{Username: name, PasswordHash: "phc", Admin: admin})
	}
	session := func(name string, d [TokenHashLen]byte, ttl uint64) []byte {
		return EncodeCreateSession(CreateSession{Username: name, TokenHash: d, TTLMs: ttl})
	}
	cases := []struct {
		name  string
		steps []applyStep
		// wantKeys lists the state keys that must exist at the end, and
		// noKeys those that must not.
		wantKeys, noKeys [][]byte
	}{
		{
			name:     "create user",
			steps:    []applyStep{{10, user("Alice", false), wantUser("Alice", false, 10)}},
			wantKeys: [][]byte{userKey("alice")},
		},
		{
			name: "name taken in any case",
			steps: []applyStep{
				{10, user("Alice", true), wantUser("Alice", true, 10)},
				{11, user("ALICE", false), wantCodeOf(userErr, errs.Conflict)},
			},
		},
		{
			name: "first claim wins, same name wins again",
			steps: []applyStep{
				{1, EncodeClaimAdmin(ClaimAdmin{Username: "Alice"}), wantHolder("alice")},
				{2, EncodeClaimAdmin(ClaimAdmin{Username: "bob"}), wantHolder("alice")},
				{3, EncodeClaimAdmin(ClaimAdmin{Username: "alice"}), wantHolder("alice")},
			},
			wantKeys: [][]byte{[]byte(keyAdminClaim)},
		},
		{
			name: "session copies user and stamps expiry",
			steps: []applyStep{
				{10, user("Alice", true), wantUser("Alice", true, 10)},
				{20, session("alice", d1, 1000), wantSession("Alice", true, 1020)},
			},
			wantKeys: [][]byte{sessionKey(d1), sessionExpKey(1020, d1)},
		},
		{
			name:   "session of unknown user",
			steps:  []applyStep{{20, session("ghost", d1, 1000), wantCodeOf(sessionErr, errs.Unauthorized)}},
			noKeys: [][]byte{sessionKey(d1)},
		},
		{
			name: "replayed session digest replaces the old expiry index",
			steps: []applyStep{
				{10, user("a", false), wantUser("a", false, 10)},
				{20, session("a", d1, 100), wantSession("a", false, 120)},
				{30, session("a", d1, 100), wantSession("a", false, 130)},
			},
			wantKeys: [][]byte{sessionExpKey(130, d1)},
			noKeys:   [][]byte{sessionExpKey(120, d1)},
		},
		{
			name: "logout deletes session and index",
			steps: []applyStep{
				{10, user("a", false), wantUser("a", false, 10)},
				{20, session("a", d1, 100), wantSession("a", false, 120)},
				{30, EncodeDeleteSession(DeleteSession{TokenHash: d1}), wantCodeOf(decodeDeleteResult, "")},
				{31, EncodeDeleteSession(DeleteSession{TokenHash: d1}), wantCodeOf(decodeDeleteResult, errs.NotFound)},
			},
			noKeys: [][]byte{sessionKey(d1), sessionExpKey(120, d1)},
		},
		{
			name: "expired sessions are purged by later commands",
			steps: []applyStep{
				{10, user("a", false), wantUser("a", false, 10)},
				{20, session("a", d1, 100), wantSession("a", false, 120)},
				{20, session("a", d2, 1000), wantSession("a", false, 1020)},
				{121, EncodeClaimAdmin(ClaimAdmin{Username: "x"}), wantHolder("x")},
			},
			wantKeys: [][]byte{sessionKey(d2), sessionExpKey(1020, d2)},
			noKeys:   [][]byte{sessionKey(d1), sessionExpKey(120, d1)},
		},
		{
			name: "huge ttl saturates",
			steps: []applyStep{
				{10, user("a", false), wantUser("a", false, 10)},
				{20, session("a", d1, 1<<63), wantSession("a", false, 1<<63-1)},
			},
		},
		{
			name:  "malformed command is refused",
			steps: []applyStep{{1, []byte{Tag, 'Z'}, wantCodeOf(userErr, errs.Invalid)}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := state.NewMem()
			for i, st := range tc.steps {
				res, err := StateMachine{}.Apply(mem, state.Meta{Partition: 1, Index: uint64(i + 1), TimeMs: st.atMs}, st.cmd)
				if err != nil {
					t.Fatalf("step %d: Apply: %v", i, err)
				}
				st.check(t, res)
			}
			for _, k := range tc.wantKeys {
				if _, ok, _ := mem.Get(k); !ok {
					t.Errorf("key %q missing", k)
				}
			}
			for _, k := range tc.noKeys {
				if _, ok, _ := mem.Get(k); ok {
					t.Errorf("key %q present", k)
				}
			}
			_ = mem.Scan(nil, nil, func(k, _ []byte) bool {
				if !bytes.HasPrefix(k, []byte("a/")) {
					t.Errorf("key %q outside the account prefix", k)
				}
				return true
			})
		})
	}
}

// TestStateMachine_Deterministic applies the same commands to two states and
// compares them byte for byte.
func TestStateMachine_Deterministic(t *testing.T) {
	cmds := [][]byte{
		EncodeCreateUser(CreateUser{Username: "Zed", PasswordHash: "p", Admin: true}),
		EncodeClaimAdmin(ClaimAdmin{Username: "ZED"}),
		EncodeCreateSession(CreateSession{Username: "zed", TokenHash: digestOf(4), TTLMs: 5}),
		EncodeCreateSession(CreateSession{Username: "zed", TokenHash: digestOf(5), TTLMs: 500}),
		EncodeDeleteSession(DeleteSession{TokenHash: digestOf(5)}),
		EncodeClaimAdmin(ClaimAdmin{Username: "other"}),
	}
	dump := func() string {
		mem := state.NewMem()
		var out bytes.Buffer
		for i, c := range cmds {
			res, err := StateMachine{}.Apply(mem, state.Meta{Index: uint64(i), TimeMs: int64(10 * i)}, c)
			if err != nil {
				t.Fatal(err)
			}
			out.Write(res)
		}
		_ = mem.Scan(nil, nil, func(k, v []byte) bool {
			out.Write(k)
			out.Write(v)
			return true
		})
		return out.String()
	}
	if a, b := dump(), dump(); a != b {
		t.Fatal("two replicas diverged")
	}
}
