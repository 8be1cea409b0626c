package nemesis

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
)

// Prefix starts the name of everything the harness creates: namespaces,
// the root namespace's veth and tmpfs sources.
const Prefix = "pnem"

// Net is one run's network: a switch namespace holding a bridge, one
// namespace per host plugged into it, and the root namespace's port on it
// (10.88.R.254), from which the test talks to the hosts.
type Net struct {
	// Run is the run number R: addresses are 10.88.R.0/24.
	Run    int
	Hosts  []*Host
	sw     string // switch namespace
	root   string // veth in the root namespace
	faults netFaults

	cutMu sync.Mutex
	cuts  map[[2]int]bool // from, to: packets dropped
}

// Host is one network namespace plugged into the run's switch.
type Host struct {
	// Index is the host's number, from 1; its address ends with it.
	Index int
	// NS is the namespace's name.
	NS string
	// Addr is the host's address.
	Addr netip.Addr
}

// NewNet builds a network of n hosts for t, removed by t.Cleanup: it first
// removes what crashed runs left, then claims a free run number.
func NewNet(t testing.TB, n int) *Net {
	t.Helper()
	Require(t)
	if n < 1 || n > 200 {
		t.Fatalf("nemesis: %d hosts: want 1 to 200", n)
	}
	Leftovers(t)
	var nw *Net
	var err error
	for range 20 {
		if nw, err = claimRun(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("nemesis: no free run number: %v", err)
	}
	t.Cleanup(nw.destroy)
	if err := nw.build(n); err != nil {
		t.Fatalf("nemesis: building the network: %v", err)
	}
	return nw
}

// claimRun picks a run number whose 10.88.R.0/24 the machine does not use
// and claims it: its owner file (created exclusively, holding this
// process's id), then its switch namespace.
func claimRun() (*Net, error) {
	r := 1 + rand.IntN(250)
	nw := &Net{Run: r, sw: fmt.Sprintf("%s-%d-sw", Prefix, r), root: fmt.Sprintf("%s%d", Prefix, r)}
	if err := nw.subnetFree(); err != nil {
		return nil, err
	}
	if err := claimOwner(r); err != nil {
		return nil, err
	}
	if _, err := run("ip", "netns", "add", nw.sw); err != nil {
		releaseOwner(r)
		return nil, err
	}
	return nw, nil
}

// subnetFree fails when a route or address of the root namespace overlaps
// the run's subnet.
func (nw *Net) subnetFree() error {
	subnet := netip.PrefixFrom(nw.addr(0), 24)
	out, err := run("ip", "-4", "-o", "addr", "show")
	if err != nil {
		return err
	}
	routes, err := run("ip", "-4", "route", "show", "table", "all")
	if err != nil {
		return err
	}
	for _, f := range strings.Fields(out + " " + routes) {
		p, err := netip.ParsePrefix(f)
		if err != nil {
			if a, aerr := netip.ParseAddr(f); aerr == nil {
				p = netip.PrefixFrom(a, 32)
			} else {
				continue
			}
		}
		if p.Overlaps(subnet) {
			return fmt.Errorf("%v overlaps %v, in use on this machine", p, subnet)
		}
	}
	return nil
}

// addr returns 10.88.R.i.
func (nw *Net) addr(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 88, byte(nw.Run), byte(i)}) }

// ClientAddr is the root namespace's address on the run's network, where
// the test's own requests come from.
func (nw *Net) ClientAddr() netip.Addr { return nw.addr(254) }

// build makes the bridge, the root port and the hosts.
func (nw *Net) build(n int) error {
	steps := [][]string{
		{"ip", "-n", nw.sw, "link", "set", "lo", "up"},
		{"ip", "-n", nw.sw, "link", "add", "br0", "type", "bridge"},
		{"ip", "-n", nw.sw, "link", "set", "br0", "up"},
		{"ip", "link", "add", nw.root, "type", "veth", "peer", "name", "up0", "netns", nw.sw},
		{"ip", "link", "set", nw.root, "alias", fmt.Sprintf("parley nemesis pid=%d", os.Getpid())},
		{"ip", "-n", nw.sw, "link", "set", "up0", "master", "br0", "up"},
		{"ip", "addr", "add", nw.ClientAddr().String() + "/24", "dev", nw.root},
		{"ip", "link", "set", nw.root, "up"},
	}
	for i := 1; i <= n; i++ {
		h := &Host{Index: i, NS: fmt.Sprintf("%s-%d-n%d", Prefix, nw.Run, i), Addr: nw.addr(i)}
		port := fmt.Sprintf("n%d", i)
		steps = append(steps,
			[]string{"ip", "netns", "add", h.NS},
			[]string{"ip", "-n", h.NS, "link", "set", "lo", "up"},
			[]string{"ip", "-n", nw.sw, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", h.NS},
			[]string{"ip", "-n", nw.sw, "link", "set", port, "master", "br0", "up"},
			[]string{"ip", "-n", h.NS, "addr", "add", h.Addr.String() + "/24", "dev", "eth0"},
			[]string{"ip", "-n", h.NS, "link", "set", "eth0", "up"},
		)
		nw.Hosts = append(nw.Hosts, h)
	}
	for _, s := range steps {
		if _, err := run(s[0], s[1:]...); err != nil {
			return err
		}
	}
	for _, h := range nw.Hosts {
		if err := initFirewall(h.NS); err != nil {
			return err
		}
	}
	return nil
}

// destroy removes the hosts, the switch and the root port (deleting a
// namespace deletes the veths in it and their peers).
func (nw *Net) destroy() {
	_ = nw.ClearNetFaults()
	var errs []error
	for _, h := range nw.Hosts {
		killNamespace(h.NS)
		if _, err := run("ip", "netns", "del", h.NS); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := run("ip", "netns", "del", nw.sw); err != nil {
		errs = append(errs, err)
	}
	_, _ = run("ip", "link", "del", nw.root) // normally gone with the switch
	unmountRun(nw.Run)
	releaseOwner(nw.Run)
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(os.Stderr, "nemesis: teardown of run %d: %v\n", nw.Run, err)
	}
}
