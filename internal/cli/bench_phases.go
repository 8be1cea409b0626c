package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// phaseMetric is the histogram of where proposals spent their time
// (internal/metrics.ProposalPhases), scraped from /metrics around a run.
const phaseMetric = "parley_raft_proposal_phase_seconds"

// phaseOrder lists the phases as a proposal goes through them.
var phaseOrder = []string{"queue", "append", "quorum", "apply", "answer", "total"}

// phaseHist is one phase's histogram summed over the nodes: cumulative
// bucket counts by upper bound, count and sum (seconds).
type phaseHist struct {
	bounds []float64
	counts []float64
	count  float64
	sum    float64
}

// scrapePhases reads the proposal phase histograms of every server and
// sums them. A server without them (an older version) adds nothing.
func scrapePhases(ctx context.Context, hc *http.Client, servers []string) (map[string]*phaseHist, error) {
	out := map[string]*phaseHist{}
	for _, s := range servers {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := scrapeOne(ctx, hc, strings.TrimRight(s, "/")+"/metrics", out)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("read %s/metrics: %w", s, err)
		}
	}
	return out, nil
}

func scrapeOne(ctx context.Context, hc *http.Client, url string, out map[string]*phaseHist) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	return parsePhases(resp.Body, out)
}

// parsePhases adds the phase histogram samples of a Prometheus text
// exposition to out.
func parsePhases(r io.Reader, out map[string]*phaseHist) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, phaseMetric+"_")
		if !ok {
			continue
		}
		kind, rest, ok := strings.Cut(rest, "{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return fmt.Errorf("%s: bad value %q", phaseMetric, value)
		}
		phase, le := label(labels, "phase"), label(labels, "le")
		h := out[phase]
		if h == nil {
			h = &phaseHist{}
			out[phase] = h
		}
		switch kind {
		case "sum":
			h.sum += v
		case "count":
			h.count += v
		case "bucket":
			bound, err := strconv.ParseFloat(le, 64)
			if err != nil {
				return fmt.Errorf("%s: bad bucket %q", phaseMetric, le)
			}
			if i := slices.Index(h.bounds, bound); i >= 0 {
				h.counts[i] += v
			} else {
				h.bounds = append(h.bounds, bound)
				h.counts = append(h.counts, v)
			}
		}
	}
	return sc.Err()
}

// label returns the value of one label of a `k="v",k2="v2"` list.
func label(labels, name string) string {
	for _, kv := range strings.Split(labels, ",") {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

// since returns what h gained since before (nil: nothing before).
func (h *phaseHist) since(before *phaseHist) *phaseHist {
	d := &phaseHist{bounds: slices.Clone(h.bounds), counts: slices.Clone(h.counts), count: h.count, sum: h.sum}
	if before == nil {
		return d
	}
	d.count -= before.count
	d.sum -= before.sum
	for i, b := range d.bounds {
		if j := slices.Index(before.bounds, b); j >= 0 {
			d.counts[i] -= before.counts[j]
		}
	}
	return d
}

// quantile estimates the q-quantile (0..1) in seconds by linear
// interpolation within the bucket holding it, as Prometheus's
// histogram_quantile does.
func (h *phaseHist) quantile(q float64) float64 {
	if h.count <= 0 {
		return 0
	}
	idx := make([]int, len(h.bounds))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return compareFloat(h.bounds[a], h.bounds[b]) })
	rank := q * h.count
	lower, below := 0.0, 0.0
	for _, i := range idx {
		if h.counts[i] >= rank {
			if math.IsInf(h.bounds[i], 1) {
				return lower
			}
			in := h.counts[i] - below
			if in <= 0 {
				return h.bounds[i]
			}
			return lower + (h.bounds[i]-lower)*(rank-below)/in
		}
		lower, below = h.bounds[i], h.counts[i]
	}
	return lower
}

func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// addPhaseParams adds to params, for each phase, the mean, p50 and p99 (ms)
// the run added to the servers' histograms (warm-up included), and how
// many proposals they cover. Nothing when the servers report no phases.
func addPhaseParams(params map[string]string, before, after map[string]*phaseHist) {
	total := after["total"]
	if total == nil || total.since(before["total"]).count <= 0 {
		return
	}
	for _, name := range phaseOrder {
		h := after[name]
		if h == nil {
			continue
		}
		d := h.since(before[name])
		if d.count <= 0 {
			continue
		}
		params["phase_"+name] = fmt.Sprintf("mean %.3f, p50 %.3f, p99 %.3f [ms]",
			1000*d.sum/d.count, 1000*d.quantile(0.5), 1000*d.quantile(0.99))
	}
	params["phase_proposals"] = strconv.FormatFloat(total.since(before["total"]).count, 'f', 0, 64) +
		" (leaders' view, warm-up included; queue, append, quorum, apply, answer add up to total)"
}
