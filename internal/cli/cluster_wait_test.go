package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// underReplicatedGauge reads parley_partitions_under_replicated from the
// node at addr.
func underReplicatedGauge(addr string) (int, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	m := regexp.MustCompile(`(?m)^parley_partitions_under_replicated (\d+)$`).FindSubmatch(b)
	if m == nil {
		return 0, fmt.Errorf("no parley_partitions_under_replicated in the metrics of %s", addr)
	}
	return strconv.Atoi(string(m[1]))
}

// gaugeSum adds the gauge over the nodes at addrs.
func gaugeSum(addrs ...string) (int, error) {
	sum := 0
	for _, a := range addrs {
		v, err := underReplicatedGauge(a)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

func TestClusterWait_Replicated(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	tc := testcluster.New(t, testcluster.Options{Nodes: 3, Partitions: 4, NoSync: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	token := tc.Client(0).Token()
	addrs := []string{tc.Node(0).HTTPAddr(), tc.Node(1).HTTPAddr(), tc.Node(2).HTTPAddr()}
	wait := func(maxWait string) result {
		return run(ctx, nil, "", "cluster", "wait", "--replicated", "--max-wait", maxWait, "--interval", "50ms", "--server", "http://"+addrs[0], "--token", token)
	}

	if r := wait("60s"); r.code != 0 || r.stdout != "all 4 partitions fully replicated\n" {
		t.Fatalf("wait on a full cluster: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	// The gauge is refreshed on its own interval: it may lag the answer.
	poll.Until(t, 10*time.Second, "the gauge reads 0 on a full cluster", func() error {
		sum, err := gaugeSum(addrs...)
		if err == nil && sum != 0 {
			err = fmt.Errorf("gauge sum on a full cluster = %d, want 0", sum)
		}
		return err
	})

	tc.Kill(2)
	// Every partition has a replica on the dead node: each is counted once,
	// by its leader (on node 0 or 1).
	poll.Until(t, 30*time.Second, "the gauge counts every partition", func() error {
		sum, err := gaugeSum(addrs[:2]...)
		if err == nil && sum != 4 {
			err = fmt.Errorf("sum %d, want 4", sum)
		}
		return err
	})
	r := wait("3s")
	if r.code != 1 || !strings.Contains(r.stderr, "waiting: 4 of 4 partitions under-replicated [1 2 3 4]") ||
		!strings.Contains(r.stderr, "gave up waiting for full replication: 4 partition(s) still under-replicated") {
		t.Errorf("wait with a node down: exit %d, stderr %q", r.code, r.stderr)
	}

	tc.Restart(2)
	if r := wait("60s"); r.code != 0 || r.stdout != "all 4 partitions fully replicated\n" {
		t.Fatalf("wait after the restart: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	poll.Until(t, 30*time.Second, "the gauge back to 0", func() error {
		sum, err := gaugeSum(addrs...)
		if err == nil && sum != 0 {
			err = fmt.Errorf("sum %d, want 0", sum)
		}
		return err
	})
}

func TestClusterWait_Usage(t *testing.T) {
	r := run(context.Background(), nil, "", "cluster", "wait", "--token", "t")
	if r.code != 2 || !strings.Contains(r.stderr, "say what to wait for: --replicated") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}
