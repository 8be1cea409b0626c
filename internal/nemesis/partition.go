package nemesis

import (
	"errors"
	"fmt"
	"slices"
)

// The chains the harness owns in each host's filter table: partitions go to
// partIn/partOut, packet loss and delay to netOut. Healing flushes them.
const (
	partIn  = "NEM-PART-IN"
	partOut = "NEM-PART-OUT"
	netOut  = "NEM-NET-OUT"
)

// initFirewall creates the harness's chains in namespace ns and hooks them
// into INPUT and OUTPUT.
func initFirewall(ns string) error {
	for _, args := range [][]string{
		{"-N", partIn}, {"-N", partOut}, {"-N", netOut},
		{"-A", "INPUT", "-j", partIn},
		{"-A", "OUTPUT", "-j", partOut},
		{"-A", "OUTPUT", "-j", netOut},
	} {
		if _, err := inNS(ns, append([]string{"iptables", "-w"}, args...)...); err != nil {
			return err
		}
	}
	return nil
}

// host returns host i (from 1).
func (nw *Net) host(i int) *Host {
	if i < 1 || i > len(nw.Hosts) {
		panic(fmt.Sprintf("nemesis: no host %d of %d", i, len(nw.Hosts)))
	}
	return nw.Hosts[i-1]
}

// CutOneWay drops every packet from host from to host to (and nothing the
// other way): from's output to to and to's input from from.
func (nw *Net) CutOneWay(from, to int) error {
	f, g := nw.host(from), nw.host(to)
	nw.cutMu.Lock()
	if nw.cuts == nil {
		nw.cuts = map[[2]int]bool{}
	}
	nw.cuts[[2]int{from, to}] = true
	nw.cutMu.Unlock()
	_, err1 := inNS(f.NS, "iptables", "-w", "-A", partOut, "-d", g.Addr.String(), "-j", "DROP")
	_, err2 := inNS(g.NS, "iptables", "-w", "-A", partIn, "-s", f.Addr.String(), "-j", "DROP")
	return errors.Join(err1, err2)
}

// Cut drops every packet between hosts a and b, both ways.
func (nw *Net) Cut(a, b int) error {
	return errors.Join(nw.CutOneWay(a, b), nw.CutOneWay(b, a))
}

// Partition cuts every pair of hosts in different groups; a host in no
// group keeps every link. Hosts are numbered from 1.
func (nw *Net) Partition(groups ...[]int) error {
	var errs []error
	for gi, g := range groups {
		for _, other := range groups[gi+1:] {
			for _, a := range g {
				for _, b := range other {
					errs = append(errs, nw.Cut(a, b))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// Isolate cuts host i from every other host.
func (nw *Net) Isolate(i int) error {
	return nw.Partition([]int{i}, nw.others(i))
}

// Bridge splits the hosts but mid into two halves that cannot talk to each
// other, while mid talks to both: connectivity is not transitive.
func (nw *Net) Bridge(mid int) error {
	rest := nw.others(mid)
	return nw.Partition(rest[:len(rest)/2], rest[len(rest)/2:])
}

// others returns every host number but i.
func (nw *Net) others(i int) []int {
	var out []int
	for _, h := range nw.Hosts {
		if h.Index != i {
			out = append(out, h.Index)
		}
	}
	return out
}

// Heal removes every partition rule of every host.
func (nw *Net) Heal() error {
	nw.cutMu.Lock()
	nw.cuts = nil
	nw.cutMu.Unlock()
	var errs []error
	for _, h := range nw.Hosts {
		for _, c := range []string{partIn, partOut} {
			_, err := inNS(h.NS, "iptables", "-w", "-F", c)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Majority returns a majority of the hosts containing i and the minority
// left over, both sorted.
func (nw *Net) Majority(i int) (majority, minority []int) {
	majority = []int{i}
	for _, o := range nw.others(i) {
		if len(majority) < len(nw.Hosts)/2+1 {
			majority = append(majority, o)
		} else {
			minority = append(minority, o)
		}
	}
	slices.Sort(majority)
	return majority, minority
}

// WithMajority reports whether host i, as the partition rules stand, talks
// both ways with a majority of the hosts (itself included).
func (nw *Net) WithMajority(i int) bool {
	nw.cutMu.Lock()
	defer nw.cutMu.Unlock()
	n := 0
	for _, h := range nw.Hosts {
		if !nw.cuts[[2]int{i, h.Index}] && !nw.cuts[[2]int{h.Index, i}] {
			n++
		}
	}
	return n >= len(nw.Hosts)/2+1
}
