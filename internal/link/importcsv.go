package link

import (
	"encoding/csv"
	"errors"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/parley-chat/parley/internal/errs"
)

// MaxImportLines is the most links one CSV import may carry.
const MaxImportLines = 1000

// ImportColumns are the columns of an import CSV, in the order used when
// the file has no header row.
var ImportColumns = []string{"url", "code", "tags", "expires_at", "max_visits", "redirect_status"}

// ImportLine is one link of an import CSV, or why its line is refused.
type ImportLine struct {
	Line int // 1-based line of the file
	URL  string
	Code string
	Options
	Err error // errs.Invalid naming the column; nil when the line parsed
}

// ParseImport reads an import CSV: an optional header row naming columns
// of ImportColumns in any order (recognised by a first field "url"), then
// one link per row; without a header the columns are ImportColumns, in
// order, and may stop early. Tags are separated by spaces or semicolons;
// expires_at is RFC 3339 or Unix milliseconds. Blank lines and lines
// starting with # are skipped. A row that does not parse is reported in
// its ImportLine; an error means the file as a whole cannot be read
// (errs.Invalid, or errs.TooLarge past MaxImportLines rows).
func ParseImport(r io.Reader) ([]ImportLine, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord, cr.Comment, cr.TrimLeadingSpace, cr.ReuseRecord = -1, '#', true, false
	cols := ImportColumns
	var out []ImportLine
	for first := true; ; first = false {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, errs.New(errs.Invalid, "the file is not valid CSV: %v", err)
		}
		line, _ := cr.FieldPos(0)
		if first && strings.EqualFold(strings.TrimSpace(rec[0]), "url") {
			if cols, err = header(rec); err != nil {
				return nil, err
			}
			continue
		}
		if len(out) == MaxImportLines {
			return nil, errs.New(errs.TooLarge, "the file has more than %d links; split it", MaxImportLines)
		}
		out = append(out, parseRow(line, cols, rec))
	}
	if len(out) == 0 {
		return nil, errs.New(errs.Invalid, "the file has no links: send one per line, url first")
	}
	return out, nil
}

// header reads a header row into the columns it names.
func header(rec []string) ([]string, error) {
	seen := map[string]bool{}
	cols := make([]string, len(rec))
	for i, f := range rec {
		c := strings.ToLower(strings.TrimSpace(f))
		known := false
		for _, k := range ImportColumns {
			known = known || k == c
		}
		if !known || seen[c] {
			return nil, errs.New(errs.Invalid, "header column %d (%q) is unknown or repeated; columns are %s", i+1, clipField(f), strings.Join(ImportColumns, ", "))
		}
		seen[c], cols[i] = true, c
	}
	return cols, nil
}

// parseRow reads one row by its columns.
func parseRow(line int, cols, rec []string) ImportLine {
	l := ImportLine{Line: line}
	if len(rec) > len(cols) {
		l.Err = errs.New(errs.Invalid, "%d fields; at most %d (%s)", len(rec), len(cols), strings.Join(cols, ", "))
		return l
	}
	for i, f := range rec {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if err := l.set(cols[i], f); err != nil {
			l.Err = err
			return l
		}
	}
	if l.URL == "" {
		l.Err = errs.New(errs.Invalid, "url is empty")
	}
	return l
}

// set sets column col of l from field f.
func (l *ImportLine) set(col, f string) error {
	var err error
	switch col {
	case "url":
		l.URL = f
	case "code":
		l.Code = f
	case "tags":
		l.Tags = strings.FieldsFunc(f, func(r rune) bool { return r == ' ' || r == ';' })
	case "expires_at":
		l.ExpiresAt, err = parseTime(f)
	case "max_visits":
		if l.MaxVisits, err = strconv.ParseUint(f, 10, 64); err != nil {
			err = errs.New(errs.Invalid, "max_visits must be a non-negative integer, got %q", clipField(f))
		}
	case "redirect_status":
		if l.Status, err = strconv.Atoi(f); err != nil {
			err = errs.New(errs.Invalid, "redirect_status must be 301, 302, 307 or 308, got %q", clipField(f))
		}
	}
	return err
}

// parseTime reads RFC 3339 or Unix milliseconds.
func parseTime(f string) (time.Time, error) {
	if ms, err := strconv.ParseInt(f, 10, 64); err == nil && ms > 0 {
		return time.UnixMilli(ms), nil
	}
	t, err := time.Parse(time.RFC3339, f)
	if err != nil {
		return time.Time{}, errs.New(errs.Invalid, "expires_at must be RFC 3339 (2030-01-02T15:04:05Z) or Unix milliseconds, got %q", clipField(f))
	}
	return t, nil
}

// clipField shortens a field quoted in an error message.
func clipField(f string) string {
	if len(f) > 40 {
		return f[:40] + "…"
	}
	return f
}
