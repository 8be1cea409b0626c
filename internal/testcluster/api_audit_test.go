package testcluster_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// auditGet sends GET /api/v1/audit?query to node i with token and returns
// the report and the raw body.
func auditGet(t *testing.T, c *testcluster.Cluster, i int, token, query string) (client.AuditReport, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(apiCtx(t), http.MethodGet, "http://"+c.Node(i).HTTPAddr()+"/api/v1/audit?"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /api/v1/audit on n%d: %v", i+1, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/audit on n%d = %d %s, %v", i+1, resp.StatusCode, b, err)
	}
	var rep client.AuditReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("audit report %s: %v", b, err)
	}
	return rep, string(b)
}

// loginEvents formats the login events of rep as "actor@node:outcome".
func loginEvents(rep client.AuditReport) []string {
	var out []string
	for _, e := range rep.Events {
		if e.Kind == "login" {
			out = append(out, fmt.Sprintf("%s@%s:%s", e.Actor, e.Node, e.Outcome))
		}
	}
	return out
}

// Each node audits the logins it serves; GET /api/v1/audit on any node
// gathers every node's events merged by time, for admins only, with no
// password or token in them; a node's events survive its restart.
func TestAPI_Audit(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := newAPICluster(t, 3, 3)
	ctx := apiCtx(t)
	root := signUpAdmin(t, c, 0, "root") // login ok on n1
	bob := signUp(t, c, 1, 1, "bob")     // login ok on n2
	const wrong = "not the password of bob"
	_, err := anonAt(c, 1).Login(ctx, "bob", wrong) // refused on n2
	mustStatus(t, err, http.StatusUnauthorized, "unauthorized")
	_, err = anonAt(c, 2).Login(ctx, "carol", password("carol")) // refused on n3
	mustStatus(t, err, http.StatusUnauthorized, "unauthorized")
	bob3 := signIn(t, c, 2, "bob") // login ok on n3

	rep, body := auditGet(t, c, 0, root.Token(), "kind=login")
	want := []string{"root@n1:ok", "bob@n2:ok", "bob@n2:refused", "carol@n3:refused", "bob@n3:ok"}
	if got := loginEvents(rep); !slices.Equal(got, want) || len(rep.Unreachable) != 0 {
		t.Fatalf("login events %q (unreachable %v), want %q", got, rep.Unreachable, want)
	}
	if !slices.IsSortedFunc(rep.Events, func(a, b client.AuditEvent) int { return a.Time.Compare(b.Time) }) {
		t.Fatalf("events not in time order: %s", body)
	}
	for _, secret := range []string{wrong, password("bob"), password("root"), password("carol"), root.Token(), bob.Token(), bob3.Token()} {
		if strings.Contains(body, secret) {
			t.Errorf("GET /api/v1/audit shows the secret %q", secret)
		}
	}

	t.Run("admins only", func(t *testing.T) {
		for i := range c.Len() {
			_, err := as(c, i, bob).Audit(ctx, client.AuditQuery{})
			mustStatus(t, err, http.StatusForbidden, "forbidden")
		}
	})

	t.Run("kept across a restart", func(t *testing.T) {
		c.Kill(2)
		c.Restart(2)
		c.WaitConverged(30 * time.Second)
		poll.Until(t, 10*time.Second, "n3's events back after its restart", func() error {
			rep, err := as(c, 1, root).Audit(ctx, client.AuditQuery{Actor: "carol"})
			if err != nil {
				return err
			}
			if got := loginEvents(*rep); !slices.Equal(got, []string{"carol@n3:refused"}) || len(rep.Unreachable) != 0 {
				return fmt.Errorf("carol's events %q, unreachable %v", got, rep.Unreachable)
			}
			return nil
		})
	})
}
