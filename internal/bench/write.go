package bench

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteText prints r for people, in the manner of Apache Bench: a summary,
// the percentile table, the per-second timeline and the kinds of errors.
func WriteText(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintf(tw, "Workload:\t%s\n", r.Workload)
	for _, k := range slices.Sorted(maps.Keys(r.Params)) {
		fmt.Fprintf(tw, "%s:\t%s\n", label(k), r.Params[k])
	}
	fmt.Fprintf(tw, "Concurrency level:\t%d\n", r.Workers)
	fmt.Fprintf(tw, "Time taken:\t%.3f seconds\n", r.ElapsedS)
	fmt.Fprintf(tw, "Complete operations:\t%d\n", r.Ops)
	fmt.Fprintf(tw, "Failed operations:\t%d\n", r.Errors)
	fmt.Fprintf(tw, "Operations per second:\t%.2f [#/sec] (mean)\n", r.OpsPerS)
	fmt.Fprintf(tw, "Latency:\tmin %.3f, mean %.3f, max %.3f [ms]\n", r.Latency.MinMs, r.Latency.MeanMs, r.Latency.MaxMs)
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintf(w, "\nPercentage of the operations served within a certain time (ms)\n")
	for _, p := range r.Latency.Percentiles {
		note := ""
		if p.P == 100 {
			note = " (longest operation)"
		}
		fmt.Fprintf(w, "  %3s%%  %9.3f%s\n", fmtP(p.P), p.Ms, note)
	}

	fmt.Fprintf(w, "\nTimeline (operations ended in each second)\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "second\tops/s\terrors\tp50 ms\tp99 ms\tmax ms\t")
	for _, s := range r.Timeline {
		fmt.Fprintf(tw, "%d\t%.0f\t%d\t%.3f\t%.3f\t%.3f\t\n", s.Second+1, s.OpsPerS, s.Errors, s.Latency.At(50), s.Latency.At(99), s.Latency.MaxMs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	if len(r.ErrorKinds) > 0 {
		fmt.Fprintf(w, "\nErrors\n")
		for _, k := range r.ErrorKinds {
			fmt.Fprintf(w, "  %8d  %s\n", k.Count, k.Message)
		}
	}
	return nil
}

// label turns a parameter key such as "value_size" into "Value size".
func label(key string) string {
	s := strings.ReplaceAll(key, "_", " ")
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// fmtP prints a percentile level without a needless fraction.
func fmtP(p float64) string { return strconv.FormatFloat(p, 'f', -1, 64) }

// WriteJSON writes r as indented JSON.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteCSV writes the timeline, one row per second, then a row whose second
// is "total" covering the whole run. Columns: second, ops, errors,
// ops_per_s, min_ms, mean_ms, then one column per percentile (p50_ms ...
// p100_ms).
func WriteCSV(w io.Writer, r *Report) error {
	cw := csv.NewWriter(w)
	head := []string{"second", "ops", "errors", "ops_per_s", "min_ms", "mean_ms"}
	for _, p := range Levels() {
		head = append(head, "p"+fmtP(p)+"_ms")
	}
	_ = cw.Write(head)
	row := func(label string, ops, errs int64, rate float64, l Latency) {
		rec := []string{label, strconv.FormatInt(ops, 10), strconv.FormatInt(errs, 10), f3(rate), f3(l.MinMs), f3(l.MeanMs)}
		for _, p := range Levels() {
			rec = append(rec, f3(l.At(p)))
		}
		_ = cw.Write(rec)
	}
	for _, s := range r.Timeline {
		row(strconv.Itoa(s.Second+1), s.Ops, s.Errors, s.OpsPerS, s.Latency)
	}
	row("total", r.Ops, r.Errors, r.OpsPerS, r.Latency)
	cw.Flush()
	return cw.Error()
}

// f3 formats a number with three decimals.
func f3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
