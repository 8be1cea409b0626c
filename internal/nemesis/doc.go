// Package nemesis runs real `parley serve` processes, each in a network
// namespace of its own, and injects the faults Jepsen injects: network
// partitions cut with iptables inside the namespaces (minority, majority,
// leader isolated, bridge, one-way, flapping), packet loss, delay and
// reordering, kill -9, SIGSTOP/SIGCONT, and restarts from an old copy of a
// data directory. Each node's data directory is a size-limited tmpfs, so a
// test can fill it.
//
// Everything a run builds is named after the run (a number R): namespaces
// pnem-R-sw (the switch: a bridge of its own, outside the root namespace's
// firewall) and pnem-R-nI (node I, address 10.88.R.I/24), one veth pnemR in
// the root namespace (10.88.R.254, the test's side) whose alias records the
// owning process, and tmpfs mounts whose source starts with pnem-R-. Traffic goes
// to those addresses only. t.Cleanup tears all of it down, failed test or
// not; Leftovers removes what a crashed run left, by name prefix, once its
// owner is gone.
//
// The package needs root, ip(8) with netns support and iptables: Require
// skips the test with the reason otherwise. It is for tests only (the
// nemesis build tag's tests in internal/jepsen use it).
package nemesis
