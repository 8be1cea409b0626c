package link

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/parley-chat/parley/internal/wire"
)

// AddVisits adds the visits one node counted since its last flush to links
// of one partition: totals per day, and human visits by referrer host,
// browser family and OS family. Codes that no longer exist are skipped.
//
// Encoding: Tag, 'V', uvarint len(Links), then for each link: uvarint
// len(Code), Code; uvarint len(Days), each Day, Humans, Bots as uvarints;
// then Referrers, Browsers and Systems, each as uvarint len, then each
// Name as uvarint len + bytes and N as uvarint. Codes, days and names are
// strictly increasing; every day has a visit and every N is at least 1.
type AddVisits struct {
	Links []LinkVisits
}

// LinkVisits are the visits of one link in an AddVisits.
type LinkVisits struct {
	Code      string
	Days      []DayVisits
	Referrers []Count // human visits by referrer host; direct visits are not listed
	Browsers  []Count // human visits by browser family
	Systems   []Count // human visits by OS family
}

// DayVisits are a link's visits on one day.
type DayVisits struct {
	Day    uint32 // days since 1970-01-01, UTC, by the serving node's clock
	Humans uint64
	Bots   uint64
}

// Count is a number of visits under a name.
type Count struct {
	Name string
	N    uint64
}

// total returns the visits of lv and how many of them were bots.
func (lv LinkVisits) total() (all, bots uint64) {
	for _, d := range lv.Days {
		all = addSat(addSat(all, d.Humans), d.Bots)
		bots = addSat(bots, d.Bots)
	}
	return all, bots
}

// addSat adds without wrapping around.
func addSat(a, b uint64) uint64 { return a + min(b, math.MaxUint64-a) }

// EncodeAddVisits returns the binary encoding of a; its lists must be in
// the order DecodeCommand requires.
func EncodeAddVisits(a AddVisits) []byte {
	b := make([]byte, 0, 64*len(a.Links))
	b = append(b, Tag, opAddVisits)
	b = binary.AppendUvarint(b, uint64(len(a.Links)))
	for _, lv := range a.Links {
		b = appendLinkVisits(b, lv)
	}
	return b
}

func appendLinkVisits(b []byte, lv LinkVisits) []byte {
	b = wire.AppendString(b, lv.Code)
	b = binary.AppendUvarint(b, uint64(len(lv.Days)))
	for _, d := range lv.Days {
		b = binary.AppendUvarint(b, uint64(d.Day))
		b = binary.AppendUvarint(b, d.Humans)
		b = binary.AppendUvarint(b, d.Bots)
	}
	for _, list := range [][]Count{lv.Referrers, lv.Browsers, lv.Systems} {
		b = binary.AppendUvarint(b, uint64(len(list)))
		for _, c := range list {
			b = wire.AppendString(b, c.Name)
			b = binary.AppendUvarint(b, c.N)
		}
	}
	return b
}

func decodeAddVisits(b []byte) (Command, error) {
	n, b, err := readUvarint(b)
	if err != nil {
		return nil, err
	}
	// Every link takes at least 8 bytes, which bounds the allocation.
	if n == 0 || n > uint64(len(b)/8) {
		return nil, fmt.Errorf("%w: %d links in %d bytes", errMalformed, n, len(b))
	}
	links := make([]LinkVisits, 0, n)
	for range n {
		var lv LinkVisits
		if lv, b, err = decodeLinkVisits(b); err != nil {
			return nil, err
		}
		if len(links) > 0 && strings.Compare(links[len(links)-1].Code, lv.Code) >= 0 {
			return nil, fmt.Errorf("%w: codes out of order", errMalformed)
		}
		links = append(links, lv)
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errMalformed, len(b))
	}
	return AddVisits{Links: links}, nil
}

func decodeLinkVisits(b []byte) (LinkVisits, []byte, error) {
	var lv LinkVisits
	var err error
	if lv.Code, b, err = readString(b); err != nil {
		return lv, nil, err
	}
	n, b, err := readUvarint(b)
	if err != nil {
		return lv, nil, err
	}
	if n == 0 || n > uint64(len(b)/3) {
		return lv, nil, fmt.Errorf("%w: %d days in %d bytes", errMalformed, n, len(b))
	}
	lv.Days = make([]DayVisits, 0, n)
	for range n {
		var v [3]uint64
		for i := range v {
			if v[i], b, err = readUvarint(b); err != nil {
				return lv, nil, err
			}
		}
		d := DayVisits{Day: uint32(v[0]), Humans: v[1], Bots: v[2]}
		switch {
		case v[0] > math.MaxUint32 || (d.Humans == 0 && d.Bots == 0):
			return lv, nil, fmt.Errorf("%w: bad day %d", errMalformed, v[0])
		case len(lv.Days) > 0 && lv.Days[len(lv.Days)-1].Day >= d.Day:
			return lv, nil, fmt.Errorf("%w: days out of order", errMalformed)
		}
		lv.Days = append(lv.Days, d)
	}
	for _, list := range []*[]Count{&lv.Referrers, &lv.Browsers, &lv.Systems} {
		if *list, b, err = readCounts(b); err != nil {
			return lv, nil, err
		}
	}
	return lv, b, nil
}

// readCounts reads a list of counts with strictly increasing names and
// positive numbers.
func readCounts(b []byte) ([]Count, []byte, error) {
	n, b, err := readUvarint(b)
	if err != nil {
		return nil, nil, err
	}
	if n > uint64(len(b)/3) {
		return nil, nil, fmt.Errorf("%w: %d counts in %d bytes", errMalformed, n, len(b))
	}
	if n == 0 {
		return nil, b, nil
	}
	out := make([]Count, 0, n)
	for range n {
		var c Count
		if c.Name, b, err = readString(b); err != nil {
			return nil, nil, err
		}
		if c.N, b, err = readUvarint(b); err != nil {
			return nil, nil, err
		}
		if c.N == 0 || (len(out) > 0 && strings.Compare(out[len(out)-1].Name, c.Name) >= 0) {
			return nil, nil, fmt.Errorf("%w: zero count or names out of order", errMalformed)
		}
		out = append(out, c)
	}
	return out, b, nil
}
