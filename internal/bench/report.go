package bench

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Levels returns the percentiles every report lists: Apache Bench's.
func Levels() []float64 { return []float64{50, 66, 75, 80, 90, 95, 98, 99, 100} }

// Report is the outcome of a run. Latencies are of successful operations
// only, in milliseconds.
type Report struct {
	// Workload is the workload's Name.
	Workload string `json:"workload"`
	// Params describe the run for the reader (servers, sizes, mix); the
	// caller fills them.
	Params map[string]string `json:"params,omitempty"`
	// Workers is the concurrency.
	Workers int `json:"workers"`
	// Started is when the measured phase began.
	Started time.Time `json:"started"`
	// ElapsedS is the measured phase's length in seconds, until its last
	// operation ended.
	ElapsedS float64 `json:"elapsed_s"`
	// Ops counts successful operations, Errors failed ones.
	Ops    int64 `json:"ops"`
	Errors int64 `json:"errors"`
	// OpsPerS is Ops / ElapsedS.
	OpsPerS float64 `json:"ops_per_s"`
	// Latency summarises every successful operation.
	Latency Latency `json:"latency"`
	// Timeline has one entry per second of the run, empty seconds included.
	Timeline []Second `json:"timeline"`
	// ErrorKinds counts failures by message, most frequent first.
	ErrorKinds []ErrorKind `json:"error_kinds,omitempty"`
}

// Latency summarises a set of operation latencies in milliseconds.
type Latency struct {
	MinMs       float64      `json:"min_ms"`
	MeanMs      float64      `json:"mean_ms"`
	MaxMs       float64      `json:"max_ms"`
	Percentiles []Percentile `json:"percentiles"`
}

// Percentile is the latency within which P percent of operations finished.
type Percentile struct {
	P  float64 `json:"p"`
	Ms float64 `json:"ms"`
}

// At returns the latency of percentile p, 0 when it was not computed.
func (l Latency) At(p float64) float64 {
	for _, q := range l.Percentiles {
		if q.P == p {
			return q.Ms
		}
	}
	return 0
}

// Second is one second of the timeline: operations that ended in
// [Second, Second+1) seconds after the start. The last second of a run
// also holds operations that ended less than a quarter second after it.
type Second struct {
	Second  int     `json:"second"`
	Ops     int64   `json:"ops"`
	Errors  int64   `json:"errors"`
	OpsPerS float64 `json:"ops_per_s"`
	Latency Latency `json:"latency"`
}

// ErrorKind counts failures with one message.
type ErrorKind struct {
	Message string `json:"message"`
	Count   int64  `json:"count"`
}

// maxErrorKinds bounds how many distinct error messages are kept; the rest
// are counted under otherErrors.
const (
	maxErrorKinds = 20
	otherErrors   = "(other errors)"
)

// recorder collects the outcome of every measured operation; safe for
// concurrent use.
type recorder struct {
	total  Histogram
	errors atomic.Int64

	mu    sync.Mutex
	slots []*slot
	kinds map[string]int64
}

// slot is one second of the timeline.
type slot struct {
	hist   Histogram
	errors atomic.Int64
}

// newRecorder returns an empty recorder.
func newRecorder() *recorder { return &recorder{kinds: map[string]int64{}} }

// record notes one operation that ended at (since the start) after taking
// lat.
func (r *recorder) record(at, lat time.Duration, err error) {
	s := r.slot(int(at/time.Second), true)
	if err != nil {
		r.errors.Add(1)
		s.errors.Add(1)
		r.noteError(err)
		return
	}
	r.total.Record(lat)
	s.hist.Record(lat)
}

// slot returns the slot of second sec, creating it (and those before) when
// create is set; nil when it does not exist.
func (r *recorder) slot(sec int, create bool) *slot {
	r.mu.Lock()
	defer r.mu.Unlock()
	for create && len(r.slots) <= sec {
		r.slots = append(r.slots, &slot{})
	}
	if sec < len(r.slots) {
		return r.slots[sec]
	}
	return nil
}

// noteError counts err by its message.
func (r *recorder) noteError(err error) {
	msg := err.Error()
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.kinds[msg]; !ok && len(r.kinds) >= maxErrorKinds {
		msg = otherErrors
	}
	r.kinds[msg]++
}

// second summarises second sec, which lasted width.
func (r *recorder) second(sec int, width time.Duration) Second {
	out := Second{Second: sec, Latency: summarize(&Histogram{})}
	s := r.slot(sec, false)
	if s == nil {
		return out
	}
	out.Ops = int64(s.hist.Count())
	out.Errors = s.errors.Load()
	if width > 0 {
		out.OpsPerS = float64(out.Ops) / width.Seconds()
	}
	out.Latency = summarize(&s.hist)
	return out
}

// report builds the final report once every worker stopped.
func (r *recorder) report(name string, workers int, started time.Time, elapsed time.Duration) *Report {
	rep := &Report{
		Workload: name,
		Workers:  workers,
		Started:  started,
		ElapsedS: elapsed.Seconds(),
		Ops:      int64(r.total.Count()),
		Errors:   r.errors.Load(),
		Latency:  summarize(&r.total),
		Timeline: []Second{},
	}
	if elapsed > 0 {
		rep.OpsPerS = float64(rep.Ops) / elapsed.Seconds()
	}
	secs := int((elapsed + time.Second - 1) / time.Second)
	r.mu.Lock()
	secs = max(secs, len(r.slots))
	r.mu.Unlock()
	widths := make([]time.Duration, secs)
	for sec := range secs {
		widths[sec] = max(min(time.Second, elapsed-time.Duration(sec)*time.Second), time.Millisecond)
	}
	// A short last second (operations in flight when time was up) would
	// show a meaningless rate: it joins the second before.
	if last := secs - 1; last >= 1 && widths[last] < time.Second/4 {
		if s := r.slot(last, false); s != nil {
			p := r.slot(last-1, true)
			p.hist.Merge(&s.hist)
			p.errors.Add(s.errors.Load())
		}
		widths[last-1] += widths[last]
		secs--
	}
	for sec := range secs {
		rep.Timeline = append(rep.Timeline, r.second(sec, widths[sec]))
	}
	r.mu.Lock()
	for msg, n := range r.kinds {
		rep.ErrorKinds = append(rep.ErrorKinds, ErrorKind{Message: msg, Count: n})
	}
	r.mu.Unlock()
	sortKinds(rep.ErrorKinds)
	return rep
}

// sortKinds orders error kinds by count, then message.
func sortKinds(ks []ErrorKind) {
	slices.SortFunc(ks, func(a, b ErrorKind) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
}

// summarize turns a histogram into milliseconds at the standard levels.
func summarize(h *Histogram) Latency {
	l := Latency{MinMs: ms(h.Min()), MeanMs: ms(h.Mean()), MaxMs: ms(h.Max())}
	for _, p := range Levels() {
		l.Percentiles = append(l.Percentiles, Percentile{P: p, Ms: ms(h.Percentile(p))})
	}
	return l
}

// ms converts d to milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
