package link

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/wire"
)

// Visit statistics of a link live under its stats prefix, one key per
// counter: "l/s/" + uvarint len(code) + code + kind + name. Kinds: 'd' + day
// (4 bytes BE) -> uvarint humans, uvarint bots; 'r' + referrer host, 'b' +
// browser family, 'o' + OS family -> uvarint human visits. They are deleted
// with the link.
const (
	statDay      byte = 'd'
	statReferrer byte = 'r'
	statBrowser  byte = 'b'
	statSystem   byte = 'o'
)

// MaxReferrers is how many referrer hosts a link keeps apart; visits from
// further hosts count under OtherReferrers, so a flood of made-up Referer
// headers cannot grow a link's state without bound.
const MaxReferrers = 100

// OtherReferrers is the referrer name of visits from hosts past
// MaxReferrers (and of referrers that are not a host name a browser sends).
const OtherReferrers = "(other)"

// Stats are a link's visits, aggregated: no visitor is stored, only counts.
type Stats struct {
	Code string
	// Visits counts every visit (redirects served), bots included; Bots
	// those flagged as bots. Both lag the redirects by up to the flush
	// interval.
	Visits, Bots uint64
	// Days are the visits of each day of the window asked with any,
	// oldest first.
	Days []DayVisits
	// Direct counts human visits without a referrer host.
	Direct uint64
	// Referrers, Browsers and Systems break human visits down by referrer
	// host, browser family and OS family, most visits first.
	Referrers, Browsers, Systems []Count
}

func statsPrefix(code string) []byte {
	b := make([]byte, 0, len(prefixStats)+binary.MaxVarintLen64+len(code))
	b = append(b, prefixStats...)
	return wire.AppendString(b, code)
}

func statKey(code string, kind byte, name string) []byte {
	return append(append(statsPrefix(code), kind), name...)
}

func dayKey(code string, day uint32) []byte {
	return binary.BigEndian.AppendUint32(append(statsPrefix(code), statDay), day)
}

// applyVisits adds lv's breakdown to the counters of its link, whose record
// r it updates (r.referrers); the caller stores r.
func applyVisits(w state.Writer, r *record, lv LinkVisits) error {
	for _, d := range lv.Days {
		if err := addDay(w, dayKey(lv.Code, d.Day), d); err != nil {
			return err
		}
	}
	for _, c := range lv.Referrers {
		k := statKey(lv.Code, statReferrer, c.Name)
		_, found, err := w.Get(k)
		if err != nil {
			return err
		}
		if !found && c.Name != OtherReferrers {
			if r.referrers >= MaxReferrers {
				k = statKey(lv.Code, statReferrer, OtherReferrers)
			} else {
				r.referrers++
			}
		}
		if err := addCount(w, k, c.N); err != nil {
			return err
		}
	}
	for _, c := range lv.Browsers {
		if err := addCount(w, statKey(lv.Code, statBrowser, c.Name), c.N); err != nil {
			return err
		}
	}
	for _, c := range lv.Systems {
		if err := addCount(w, statKey(lv.Code, statSystem, c.Name), c.N); err != nil {
			return err
		}
	}
	return nil
}

func addCount(w state.Writer, k []byte, n uint64) error {
	v, _, err := w.Get(k)
	if err != nil {
		return err
	}
	old, _ := binary.Uvarint(v) // a missing or corrupt counter starts at 0
	return w.Set(k, binary.AppendUvarint(nil, addSat(old, n)))
}

func addDay(w state.Writer, k []byte, d DayVisits) error {
	v, _, err := w.Get(k)
	if err != nil {
		return err
	}
	humans, n := binary.Uvarint(v)
	var bots uint64
	if n > 0 {
		bots, _ = binary.Uvarint(v[n:])
	}
	out := binary.AppendUvarint(nil, addSat(humans, d.Humans))
	return w.Set(k, binary.AppendUvarint(out, addSat(bots, d.Bots)))
}

// deleteStats removes every counter of code.
func deleteStats(w state.Writer, code string) error {
	lo := statsPrefix(code)
	var keys [][]byte
	err := w.Scan(lo, state.PrefixEnd(lo), func(k, _ []byte) bool {
		keys = append(keys, append([]byte(nil), k...))
		return true
	})
	if err != nil {
		return fmt.Errorf("link: scan stats of %q: %w", code, err)
	}
	for _, k := range keys {
		if err := w.Delete(k); err != nil {
			return fmt.Errorf("link: delete stats of %q: %w", code, err)
		}
	}
	return nil
}

// readStats reads the counters of the link whose record is r, with the
// days in [fromDay, toDay].
func readStats(rd state.Reader, code string, r record, fromDay, toDay uint32) (Stats, error) {
	st := Stats{Code: code, Visits: r.hits, Bots: r.bots}
	lo := statsPrefix(code)
	var refs uint64
	err := rd.Scan(lo, state.PrefixEnd(lo), func(k, v []byte) bool {
		kind, name := k[len(lo)], k[len(lo)+1:]
		if kind == statDay {
			if len(name) != 4 {
				return true
			}
			day := binary.BigEndian.Uint32(name)
			humans, n := binary.Uvarint(v)
			if day < fromDay || day > toDay || n <= 0 {
				return true
			}
			bots, _ := binary.Uvarint(v[n:])
			st.Days = append(st.Days, DayVisits{Day: day, Humans: humans, Bots: bots})
			return true
		}
		c := Count{Name: string(name)}
		c.N, _ = binary.Uvarint(v)
		switch kind {
		case statReferrer:
			st.Referrers = append(st.Referrers, c)
			refs = addSat(refs, c.N)
		case statBrowser:
			st.Browsers = append(st.Browsers, c)
		case statSystem:
			st.Systems = append(st.Systems, c)
		}
		return true
	})
	if err != nil {
		return Stats{}, fmt.Errorf("link: read stats of %q: %w", code, err)
	}
	if humans := r.hits - min(r.bots, r.hits); humans > refs {
		st.Direct = humans - refs
	}
	for _, list := range [][]Count{st.Referrers, st.Browsers, st.Systems} {
		slices.SortFunc(list, func(a, b Count) int {
			if c := cmp.Compare(b.N, a.N); c != 0 {
				return c
			}
			return cmp.Compare(a.Name, b.Name)
		})
	}
	return st, nil
}
