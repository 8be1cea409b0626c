package multiraft

import (
	"context"
	"sync"
	"testing"
	"time"
)

// A checksum marker makes every replica hash the group's state at the same
// index: the sums agree, equal the store's own checksum at that index, and
// differ once the state differs.
func TestEngine_ChecksumMarker(t *testing.T) {
	tn := newTestNet(t, 3, 0)
	for i := 0; i < 20; i++ {
		tn.propose(NewProposalID(), byte(i+1))
	}
	marker := []byte("m1")
	res, err := tn.leader().Propose(context.Background(), 1, NewProposalID(), ChecksumCommand(marker))
	if err != nil {
		t.Fatal(err)
	}
	index, sum, err := DecodeChecksumResult(res)
	if err != nil {
		t.Fatal(err)
	}
	for name, e := range tn.net.engines {
		var got uint64
		deadline := time.Now().Add(10 * time.Second)
		for {
			s, ok := e.MarkerChecksum(1, marker, index)
			if ok {
				got = s
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never applied the marker", name)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if got != sum {
			t.Fatalf("%s: sum %x at index %d, the leader's is %x", name, got, index, sum)
		}
		// Nothing else was proposed: the store at rest agrees.
		applied, dbSum, err := tn.dbs[name].Checksum(1)
		if err != nil {
			t.Fatal(err)
		}
		if applied == index && dbSum != sum {
			t.Fatalf("%s: marker sum %x, store checksum %x at the same index %d", name, sum, dbSum, index)
		}
	}
	tn.propose(NewProposalID(), 1)
	res, err = tn.leader().Propose(context.Background(), 1, NewProposalID(), ChecksumCommand([]byte("m2")))
	if err != nil {
		t.Fatal(err)
	}
	if _, sum2, _ := DecodeChecksumResult(res); sum2 == sum {
		t.Fatal("the sum did not change with the state")
	}
}

// Every applied command yields a lag sample on every replica; followers say
// which leader commit they were behind.
func TestEngine_LagSamples(t *testing.T) {
	tn := newTestNet(t, 3, 0)
	lead := tn.leader()
	var mu sync.Mutex
	samples := map[*Engine]int{}
	for _, e := range tn.net.engines {
		e := e
		done := make(chan struct{})
		e.post(func() {
			e.cfg.OnLag = func(_ uint64, _ bool, lagMs []int64, _ uint64) {
				mu.Lock()
				samples[e] += len(lagMs)
				for _, l := range lagMs {
					if l < 0 {
						t.Errorf("negative lag %d", l)
					}
				}
				mu.Unlock()
			}
			close(done)
		})
		<-done
	}
	for i := 0; i < 10; i++ {
		tn.propose(NewProposalID(), 1)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		ok := len(samples) == 3
		for _, n := range samples {
			ok = ok && n >= 10
		}
		mu.Unlock()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lag samples per engine %v, want 10 on each of 3", samples)
		}
		time.Sleep(5 * time.Millisecond)
	}
	st, ok, err := lead.GroupStatus(context.Background(), 1)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if st.LagEntries != 0 {
		t.Fatalf("leader lag entries %d, want 0", st.LagEntries)
	}
}
