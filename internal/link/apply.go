package link

import (
	"fmt"
	"math"

	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/state"
)

// StateMachine applies link commands to one partition's state. It has no
// fields: everything it needs is in the command, the meta and the state.
//
// Keys (relative to the partition, all under "l/"): "l/c/"+code holds a
// link's record (created time, visits, settings, owner, URL);
// "l/u/"+owner+^created+code indexes each owner's links newest first, for
// Mine; "l/s/"+code+... hold its visit counters (stats.go).
type StateMachine struct{}

var _ state.Applier = StateMachine{}

// Apply implements state.Applier. A command that does not decode yields an
// invalid result and changes nothing; an error means the state could not be
// read or written, or a stored record is corrupt.
func (StateMachine) Apply(w state.Writer, meta state.Meta, cmd []byte) ([]byte, error) {
	c, err := DecodeCommand(cmd)
	if err != nil {
		return invalidResult(err), nil
	}
	switch c := c.(type) {
	case Create:
		return applyCreate(w, meta, c)
	case Delete:
		return applyDelete(w, c)
	case AddHits:
		return applyAddHits(w, c)
	case Update:
		return applyUpdate(w, c)
	case AddVisits:
		return applyAddVisits(w, c)
	default:
		return invalidResult(fmt.Errorf("link: unhandled command %T", c)), nil
	}
}

func applyCreate(w state.Writer, meta state.Meta, c Create) ([]byte, error) {
	k := linkKey(c.Code)
	_, found, err := w.Get(k)
	if err != nil {
		return nil, fmt.Errorf("link: read %q: %w", c.Code, err)
	}
	if found {
		return []byte{statusConflict}, nil
	}
	r := record{createdMs: meta.TimeMs, createdBy: c.CreatedBy, url: c.URL, settings: settings{
		expiresMs: c.ExpiresMs, maxVisits: c.MaxVisits, status: statusOr(c.Status), tags: c.Tags,
	}}
	rec := encodeRecord(r)
	if err := w.Set(k, rec); err != nil {
		return nil, fmt.Errorf("link: create %q: %w", c.Code, err)
	}
	if err := w.Set(ownerKey(ident.Fold(c.CreatedBy), r.createdMs, c.Code), nil); err != nil {
		return nil, fmt.Errorf("link: index %q: %w", c.Code, err)
	}
	return append([]byte{statusOK}, rec...), nil
}

func applyDelete(w state.Writer, d Delete) ([]byte, error) {
	k := linkKey(d.Code)
	r, found, err := getRecord(w, d.Code)
	if err != nil {
		return nil, err
	}
	if !found {
		return []byte{statusNotFound}, nil
	}
	owner := ident.Fold(r.createdBy)
	if !d.Admin && ident.Fold(d.User) != owner {
		return []byte{statusForbidden}, nil
	}
	if err := w.Delete(ownerKey(owner, r.createdMs, d.Code)); err != nil {
		return nil, fmt.Errorf("link: unindex %q: %w", d.Code, err)
	}
	if err := w.Delete(k); err != nil {
		return nil, fmt.Errorf("link: delete %q: %w", d.Code, err)
	}
	if err := deleteStats(w, d.Code); err != nil {
		return nil, err
	}
	return []byte{statusOK}, nil
}

func applyAddHits(w state.Writer, a AddHits) ([]byte, error) {
	var updated uint64
	for _, h := range a.Hits {
		k := linkKey(h.Code)
		r, found, err := getRecord(w, h.Code)
		if err != nil {
			return nil, err
		}
		if !found {
			continue // deleted since the hits were counted
		}
		r.hits += min(h.N, math.MaxUint64-r.hits)
		if err := w.Set(k, encodeRecord(r)); err != nil {
			return nil, fmt.Errorf("link: count hits of %q: %w", h.Code, err)
		}
		updated++
	}
	return hitsResult(updated), nil
}

// statusOr returns the redirect status to store for a command's status.
func statusOr(s uint16) uint16 {
	if s == 0 {
		return DefaultStatus
	}
	return s
}

func applyUpdate(w state.Writer, u Update) ([]byte, error) {
	k := linkKey(u.Code)
	r, found, err := getRecord(w, u.Code)
	if err != nil {
		return nil, err
	}
	if !found {
		return []byte{statusNotFound}, nil
	}
	if !ident.EqualFold(u.User, r.createdBy) {
		return []byte{statusNotOwner}, nil
	}
	if u.Fields&FieldURL != 0 {
		r.url = u.URL
	}
	if u.Fields&FieldExpires != 0 {
		r.expiresMs = u.ExpiresMs
	}
	if u.Fields&FieldMaxVisits != 0 {
		r.maxVisits = u.MaxVisits
	}
	if u.Fields&FieldStatus != 0 {
		r.status = statusOr(u.Status)
	}
	if u.Fields&FieldTags != 0 {
		r.tags = u.Tags
	}
	if u.Fields&FieldDisabled != 0 {
		r.disabled = u.Disabled
	}
	rec := encodeRecord(r)
	if err := w.Set(k, rec); err != nil {
		return nil, fmt.Errorf("link: update %q: %w", u.Code, err)
	}
	return append([]byte{statusOK}, rec...), nil
}

func applyAddVisits(w state.Writer, a AddVisits) ([]byte, error) {
	var updated uint64
	for _, lv := range a.Links {
		k := linkKey(lv.Code)
		r, found, err := getRecord(w, lv.Code)
		if err != nil {
			return nil, err
		}
		if !found {
			continue // deleted since the visits were counted
		}
		all, bots := lv.total()
		r.hits, r.bots = addSat(r.hits, all), addSat(r.bots, bots)
		if err := applyVisits(w, &r, lv); err != nil {
			return nil, fmt.Errorf("link: count visits of %q: %w", lv.Code, err)
		}
		if err := w.Set(k, encodeRecord(r)); err != nil {
			return nil, fmt.Errorf("link: count visits of %q: %w", lv.Code, err)
		}
		updated++
	}
	return hitsResult(updated), nil
}

// getRecord reads the record of code; found is false when there is none.
func getRecord(r state.Reader, code string) (record, bool, error) {
	rec, found, err := r.Get(linkKey(code))
	if err != nil {
		return record{}, false, fmt.Errorf("link: read %q: %w", code, err)
	}
	if !found {
		return record{}, false, nil
	}
	rc, err := decodeRecord(rec)
	return rc, err == nil, err
}
