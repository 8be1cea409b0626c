package search

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/highlight/highlighter/html"
	"github.com/blevesearch/bleve/v2/search/query"
)

// Field names of an indexed message.
const (
	fieldText     = "text"
	fieldSender   = "sender"
	fieldRoom     = "room"
	fieldTs       = "ts"
	fieldAudience = "aud"
	// everyone is the audience of a message to the room; no folded
	// username is "*".
	everyone = "*"
	// analyzerName is the text analyzer: Unicode word boundaries, lower
	// case, nothing dropped or stemmed, so "a word matches" means exactly
	// that (DESIGN.md).
	analyzerName = "parley_words"
)

// Doc is one message as the index holds it.
type Doc struct {
	Room   string
	Seq    uint64
	Ts     int64
	Sender string // folded
	Text   string
	// Audience is who may see a whisper (folded), nil for a message to the
	// room.
	Audience []string
}

// bleveDoc is a Doc in the form the mapping describes.
type bleveDoc struct {
	Text     string   `json:"text"`
	Sender   string   `json:"sender"`
	Room     string   `json:"room"`
	Ts       float64  `json:"ts"`
	Audience []string `json:"aud"`
}

// docID names the document of room's message seq; room names cannot hold
// '/'.
func docID(room string, seq uint64) string { return room + "/" + strconv.FormatUint(seq, 10) }

func parseDocID(id string) (room string, seq uint64, ok bool) {
	i := strings.LastIndexByte(id, '/')
	if i <= 0 {
		return "", 0, false
	}
	seq, err := strconv.ParseUint(id[i+1:], 10, 64)
	return id[:i], seq, err == nil
}

// persisterNap is how long scorch's persister waits between writes.
const persisterNap = 2 * time.Second

// Index is the Bleve index of one partition replica's messages: a scorch
// index in its own directory, a cache nobody reads again once it is closed
// (DESIGN.md says why on disk, and why never reopened). It is safe for
// concurrent use: Bleve lets searches run while batches apply.
type Index struct {
	b   bleve.Index
	dir string
}

// NewIndex returns an empty index in a new directory under parent (the
// system's temporary directory when ""). Close removes it.
func NewIndex(parent string) (*Index, error) {
	if parent != "" {
		if err := os.MkdirAll(parent, 0o750); err != nil {
			return nil, fmt.Errorf("search: index directory: %w", err)
		}
	}
	dir, err := os.MkdirTemp(parent, "index-")
	if err != nil {
		return nil, fmt.Errorf("search: index directory: %w", err)
	}
	path := filepath.Join(dir, "bleve")
	// unsafe_batch: a batch returns once searchable, not once persisted;
	// nothing reads the files after a crash. The persister naps so that
	// the small segments of many batches are merged in memory and written
	// (and fsynced) together, not one file per batch beside the Raft log's
	// fsyncs (DESIGN.md, "What indexing costs").
	b, err := bleve.NewUsing(path, newMapping(), scorch.Name, scorch.Name, map[string]any{
		"unsafe_batch": true,
		"scorchPersisterOptions": map[string]any{
			"PersisterNapTimeMSec":      persisterNap.Milliseconds(),
			"PersisterNapUnderNumFiles": 1000,
		},
	})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("search: new index: %w", err)
	}
	return &Index{b: b, dir: dir}, nil
}

func newMapping() mapping.IndexMapping {
	im := bleve.NewIndexMapping()
	_ = im.AddCustomAnalyzer(analyzerName, map[string]any{
		"type":          custom.Name,
		"tokenizer":     unicode.Name,
		"token_filters": []any{lowercase.Name},
	})
	text := bleve.NewTextFieldMapping()
	text.Analyzer = analyzerName
	text.Store = true // highlights are cut from the stored text
	text.IncludeInAll = false
	text.DocValues = false // doc values serve sorts and facets: only ts is sorted on
	keyword := func() *mapping.FieldMapping {
		f := bleve.NewKeywordFieldMapping()
		f.Store, f.IncludeInAll, f.IncludeTermVectors, f.DocValues = false, false, false, false
		return f
	}
	ts := bleve.NewNumericFieldMapping()
	ts.Store, ts.IncludeInAll = false, false
	dm := bleve.NewDocumentStaticMapping()
	dm.AddFieldMappingsAt(fieldText, text)
	dm.AddFieldMappingsAt(fieldSender, keyword())
	dm.AddFieldMappingsAt(fieldRoom, keyword())
	dm.AddFieldMappingsAt(fieldAudience, keyword())
	dm.AddFieldMappingsAt(fieldTs, ts)
	// No _all field: every query names its field, and filling a composite
	// of nothing still cost ~6 % of indexing's CPU.
	dm.AddSubDocumentMapping("_all", bleve.NewDocumentDisabledMapping())
	im.DefaultMapping = dm
	im.DefaultAnalyzer = analyzerName
	im.StoreDynamic, im.IndexDynamic, im.DocValuesDynamic = false, false, false
	return im
}

// Close releases the index and removes its directory.
func (x *Index) Close() error {
	err := x.b.Close()
	if rmErr := os.RemoveAll(x.dir); err == nil {
		err = rmErr
	}
	return err
}

// DiskBytes returns the size of the index's files.
func (x *Index) DiskBytes() int64 {
	var n int64
	_ = filepath.WalkDir(x.dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// Count returns how many messages the index holds.
func (x *Index) Count() (uint64, error) { return x.b.DocCount() }

// Batch is a set of changes applied at once.
type Batch struct {
	b *bleve.Batch
}

// NewBatch returns an empty batch of x.
func (x *Index) NewBatch() *Batch { return &Batch{b: x.b.NewBatch()} }

// Put adds d, replacing the room's message d.Seq if indexed.
func (b *Batch) Put(d Doc) error {
	aud := d.Audience
	if len(aud) == 0 {
		aud = []string{everyone}
	}
	return b.b.Index(docID(d.Room, d.Seq), bleveDoc{Text: d.Text, Sender: d.Sender, Room: d.Room, Ts: float64(d.Ts), Audience: aud})
}

// Delete removes room's message seq (nothing when not indexed).
func (b *Batch) Delete(room string, seq uint64) { b.b.Delete(docID(room, seq)) }

// Size returns how many changes b holds.
func (b *Batch) Size() int { return b.b.Size() }

// Apply applies b to x.
func (x *Index) Apply(b *Batch) error {
	if b.b.Size() == 0 {
		return nil
	}
	if err := x.b.Batch(b.b); err != nil {
		return fmt.Errorf("search: apply batch: %w", err)
	}
	return nil
}

// Scope is what a search may see of one index, decided from the
// replica's state: the rooms the caller may read and the user whose
// whispers it may see.
type Scope struct {
	// User is the caller, folded.
	User string
	// Readable and Unreadable split the partition's live rooms; a hit in
	// a room of neither list (deleted since it was indexed) is dropped
	// later, by the state check of each hit.
	Readable, Unreadable []string
}

// Hit is one indexed message a search found.
type Hit struct {
	Room  string  `json:"room"`
	Seq   uint64  `json:"seq"`
	Score float64 `json:"score"`
	// Highlights are fragments of the text with the matched words in
	// <mark></mark>, HTML-escaped.
	Highlights []string `json:"highlights,omitempty"`
}

// Spec is one search of an index.
type Spec struct {
	Query Query
	// After and Before bound the message time (Unix ms, exclusive); 0 for
	// none.
	After, Before int64
	Limit         int
}

// Search returns up to spec.Limit hits in scope, best first; with filters
// alone (no word nor phrase), newest first.
func (x *Index) Search(ctx context.Context, spec Spec, scope Scope) ([]Hit, error) {
	q, ok := x.query(spec, scope)
	if !ok {
		return nil, nil
	}
	req := bleve.NewSearchRequestOptions(q, max(spec.Limit, 1), 0, false)
	if len(spec.Query.Words)+len(spec.Query.Phrases) > 0 {
		// By score alone: a second sort key is read from the doc values of
		// every match, which took 60% of a search at 100,000 messages.
		req.Highlight = bleve.NewHighlightWithStyle(html.Name)
		req.Highlight.AddField(fieldText)
	} else {
		req.SortBy([]string{"-" + fieldTs}) // filters alone: newest first
	}
	res, err := x.b.SearchInContext(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	hits := make([]Hit, 0, len(res.Hits))
	for _, h := range res.Hits {
		room, seq, ok := parseDocID(h.ID)
		if !ok {
			continue
		}
		hits = append(hits, Hit{Room: room, Seq: seq, Score: h.Score, Highlights: h.Fragments[fieldText]})
	}
	return hits, nil
}

// query builds the Bleve query of spec in scope; false when nothing can
// match (no readable room).
func (x *Index) query(spec Spec, scope Scope) (query.Query, bool) {
	qq := spec.Query
	var must []query.Query
	if len(qq.Words) > 0 {
		m := bleve.NewMatchQuery(strings.Join(qq.Words, " "))
		m.SetField(fieldText)
		m.SetOperator(query.MatchQueryOperatorAnd)
		must = append(must, m)
	}
	for _, p := range qq.Phrases {
		m := bleve.NewMatchPhraseQuery(p)
		m.SetField(fieldText)
		must = append(must, m)
	}
	if qq.From != "" {
		must = append(must, term(fieldSender, qq.From))
	}
	if spec.After != 0 || spec.Before != 0 {
		must = append(must, timeRange(spec.After, spec.Before))
	}
	must = append(must, bleve.NewDisjunctionQuery(term(fieldAudience, everyone), term(fieldAudience, scope.User)))
	var mustNot []query.Query
	switch {
	case qq.Room != "":
		if !contains(scope.Readable, qq.Room) {
			return nil, false
		}
		must = append(must, term(fieldRoom, qq.Room))
	case len(scope.Unreadable) == 0:
	case len(scope.Readable) == 0:
		return nil, false
	case len(scope.Readable) <= len(scope.Unreadable):
		rooms := make([]query.Query, len(scope.Readable))
		for i, r := range scope.Readable {
			rooms[i] = term(fieldRoom, r)
		}
		must = append(must, bleve.NewDisjunctionQuery(rooms...))
	default:
		for _, r := range scope.Unreadable {
			mustNot = append(mustNot, term(fieldRoom, r))
		}
	}
	if len(qq.Words)+len(qq.Phrases) == 0 {
		must = append(must, bleve.NewMatchAllQuery())
	}
	b := bleve.NewBooleanQuery()
	b.AddMust(must...)
	b.AddMustNot(mustNot...)
	return b, true
}

func term(field, v string) query.Query {
	t := bleve.NewTermQuery(v)
	t.SetField(field)
	return t
}

// timeRange matches times strictly between after and before (0: unbounded).
func timeRange(after, before int64) query.Query {
	var lo, hi *float64
	no := false
	if after != 0 {
		v := float64(after)
		lo = &v
	}
	if before != 0 {
		v := float64(before)
		hi = &v
	}
	r := bleve.NewNumericRangeInclusiveQuery(lo, hi, &no, &no)
	r.SetField(fieldTs)
	return r
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
