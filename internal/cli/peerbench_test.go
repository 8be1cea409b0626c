package cli

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/bench"
)

// stubEtcd is an EtcdKVWorkload that does nothing, or fails its health
// check.
type stubEtcd struct {
	o         bench.EtcdKVOptions
	unhealthy bool
}

var _ EtcdKVWorkload = (*stubEtcd)(nil)

func (s *stubEtcd) Name() string                       { return "etcd-kv/" + s.o.Mix }
func (s *stubEtcd) Op(context.Context, int, int) error { return nil }

func (s *stubEtcd) Health(context.Context, string) error {
	if s.unhealthy {
		return errors.New("no leader")
	}
	return nil
}

// stubPeers returns Peers whose etcd workload is a stub recording its
// options in *got; the others fail to open.
func stubPeers(got *bench.EtcdKVOptions, unhealthy bool) Peers {
	refuse := errors.New("not in this test")
	return Peers{
		EtcdKV: func(o bench.EtcdKVOptions) (EtcdKVWorkload, error) {
			*got = o
			return &stubEtcd{o: o, unhealthy: unhealthy}, nil
		},
		NATSPublish:   func(bench.NATSPublishOptions) (NATSPublishWorkload, error) { return nil, refuse },
		RabbitMQQueue: func(bench.RabbitMQQueueOptions) (RabbitMQQueueWorkload, error) { return nil, refuse },
	}
}

// runPeers runs the parley-bench command line args with p.
func runPeers(p Peers, args ...string) result {
	var out, errOut syncBuffer
	code := RunPeerBench(context.Background(), &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut}, p, args)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

func TestRunPeerBench_Dispatch(t *testing.T) {
	var got bench.EtcdKVOptions
	for _, tc := range []struct {
		args      []string
		unhealthy bool
		code      int
		stdout    []string
		stderr    []string
	}{
		{args: []string{"-h"}, stdout: []string{"Usage: parley-bench <command>", "etcd-kv", "nats-publish", "rabbitmq-queue", "'parley bench'"}},
		{args: nil, code: 2, stderr: []string{"Usage: parley-bench <command>"}},
		{args: []string{"kv"}, code: 2, stderr: []string{`unknown command "kv" for parley-bench`}},
		{args: []string{"etcd-kv", "-h"}, stdout: []string{"Usage: parley-bench etcd-kv", "--endpoints"}},
		{args: []string{"nats-publish", "-h"}, stdout: []string{"--urls", "--replicas"}},
		{args: []string{"rabbitmq-queue", "-h"}, stdout: []string{"--urls", "--prefetch"}},
		{args: []string{"etcd-kv", "--clients", "0"}, code: 2, stderr: []string{"--clients", "run 'parley-bench etcd-kv -h'"}},
		{args: []string{"etcd-kv", "--endpoints", "http://e:1", "--requests", "3"}, unhealthy: true, code: 1, stderr: []string{"etcd member http://e:1 is not healthy: no leader"}},
		{args: []string{"etcd-kv", "--endpoints", "http://e:1,http://e:2", "--requests", "7", "--mix", "mixed", "--keys", "9", "-q"}, stdout: []string{"etcd-kv/mixed", "Endpoints:             http://e:1,http://e:2"}},
		{args: []string{"nats-publish", "--requests", "1"}, code: 1, stderr: []string{"not in this test"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := runPeers(stubPeers(&got, tc.unhealthy), tc.args...)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d; stdout %q stderr %q", r.code, tc.code, r.stdout, r.stderr)
			}
			for _, s := range tc.stdout {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
				}
			}
			for _, s := range tc.stderr {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, r.stderr)
				}
			}
		})
	}
	if !slices.Equal(got.Endpoints, []string{"http://e:1", "http://e:2"}) || got.Mix != "mixed" || got.Keys != 9 || got.HTTP == nil {
		t.Errorf("the workload was opened with %+v", got)
	}
}

// TestRun_PeersLeftParley checks that parley itself no longer offers the
// peer benchmarks: they are parley-bench's.
func TestRun_PeersLeftParley(t *testing.T) {
	r := run(context.Background(), nil, "", "bench", "-h")
	for _, name := range []string{"etcd-kv", "nats-publish", "rabbitmq-queue"} {
		if strings.Contains(r.stdout, "\n  "+name+" ") {
			t.Errorf("parley bench -h lists %s:\n%s", name, r.stdout)
		}
		if r := run(context.Background(), nil, "", "bench", name); r.code != 2 || !strings.Contains(r.stderr, "unknown command") {
			t.Errorf("parley bench %s: exit %d, stderr %q; want an unknown command", name, r.code, r.stderr)
		}
	}
	if !strings.Contains(r.stdout, "parley-bench") {
		t.Errorf("parley bench -h does not point to parley-bench:\n%s", r.stdout)
	}
}
