package ratelimit

// slotSet is the slot counts of one (limit, key): a lease per holder. There
// are few holders (the nodes a user's connections go through), so a slice.
type slotSet struct {
	leases []lease
}

// lease is one holder's count, valid until expires (Unix ns).
type lease struct {
	holder  string
	n       int
	seq     uint64
	expires int64
}

// set applies "holder uses n slots" with sequence seq at now, under a cap
// of capN, and drops lapsed leases. See Table.Hold.
func (s *slotSet) set(holder string, n int, seq uint64, now, expires int64, capN int) bool {
	s.dropLapsed(now)
	i := s.index(holder)
	cur := 0
	if i >= 0 {
		if seq <= s.leases[i].seq {
			return s.leases[i].n >= n // an older message: the newer one stands
		}
		cur = s.leases[i].n
	}
	if n > cur && s.used(i, now)+n > capN {
		return false
	}
	switch {
	case n == 0 && i < 0:
	case i >= 0:
		// A count of 0 stays until it lapses, as a tombstone that keeps
		// an older, reordered claim from reviving the count.
		s.leases[i] = lease{holder: holder, n: n, seq: seq, expires: expires}
	default:
		s.leases = append(s.leases, lease{holder: holder, n: n, seq: seq, expires: expires})
	}
	return true
}

// used sums the live counts of every holder but the one at index skip.
func (s *slotSet) used(skip int, now int64) int {
	sum := 0
	for i, l := range s.leases {
		if i != skip && l.expires > now {
			sum += l.n
		}
	}
	return sum
}

func (s *slotSet) index(holder string) int {
	for i, l := range s.leases {
		if l.holder == holder {
			return i
		}
	}
	return -1
}

func (s *slotSet) dropLapsed(now int64) {
	live := s.leases[:0]
	for _, l := range s.leases {
		if l.expires > now {
			live = append(live, l)
		}
	}
	clear(s.leases[len(live):])
	s.leases = live
}
