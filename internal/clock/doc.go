// Package clock is the node's clock for every time that is stamped into the
// replicated state or decides an expiry: the wall clock as it read it when
// the node started, carried forward by the monotonic clock.
//
// A wall clock can jump: an operator sets it by hand, a virtual machine
// resumes, NTP steps it. Raft does not care (its timeouts count ticks of
// the monotonic clock), but Parley's leaders stamp wall time into every
// command (multiraft's envelope), and that time decides when idempotency
// records, queue leases, KV leases and sessions end. A leader whose clock
// jumped five minutes ahead would end every queue lease at once and forget
// the idempotency records of retries still in flight. So the node keeps
// time by the monotonic clock, which never jumps, and follows the wall
// clock only as NTP's slewing does, by at most MaxSlew of the time elapsed;
// a bigger difference is reported once (a clock_jump cluster event) and
// is not followed. A node starts from its wall clock; its peers' clocks,
// read when it announces its start, correct it (Correct) when a majority
// of the cluster agrees it is more than JumpThreshold off.
//
// Now reads the wall clock once per Resync (10 ms) at most, and in between
// adds the monotonic time elapsed to the time it last computed, without a
// lock: a node reads its clock for every request it serves.
//
// The failpoints build tag adds an offset to the wall clock read from a
// file, so the nemesis tests can jump one node's clock in a real process
// (libfaketime cannot move a static Go binary's clock). A normal build
// reads time.Now and nothing else.
package clock
