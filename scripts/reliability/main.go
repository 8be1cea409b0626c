// Command reliability renders the results of the fault-injection tests
// (JSON lines written by internal/jepsen, one per row) as the Markdown
// table of docs/RELIABILITY.md, replacing what lies between the
// "<!-- results -->" and "<!-- /results -->" markers:
//
//	go run ./scripts/reliability -results /tmp/nemesis.jsonl -doc docs/RELIABILITY.md
//
// When a row appears more than once the last one wins, so a file that
// several runs appended to holds the newest result of each row. Rows
// already in the document and absent from the results are kept.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/parley-chat/parley/internal/jepsen"
)

const (
	// rowMark starts the hidden copy of each row's JSON kept in the document,
	// so a later run of some rows keeps the others.
	rowMark = "<!-- row "
)

func main() {
	results := flag.String("results", "", "JSON lines `file` the tests wrote ($PARLEY_NEMESIS_RESULTS)")
	doc := flag.String("doc", "docs/RELIABILITY.md", "Markdown `file` to update")
	long := flag.Bool("long", false, "render the long form's table (between the results-long markers)")
	flag.Parse()
	begin, end := "<!-- results -->", "<!-- /results -->"
	if *long {
		begin, end = "<!-- results-long -->", "<!-- /results-long -->"
	}
	if err := run(*results, *doc, begin, end); err != nil {
		fmt.Fprintln(os.Stderr, "reliability:", err)
		os.Exit(1)
	}
}

// run renders the rows of resultsPath, merged with those already between
// begin and end in docPath, between those markers.
func run(resultsPath, docPath, begin, end string) error {
	text, err := os.ReadFile(docPath)
	if err != nil {
		return err
	}
	head, mid, tail, err := split(string(text), begin, end)
	if err != nil {
		return fmt.Errorf("%s: %w", docPath, err)
	}
	rows, order := parse(strings.NewReader(mid), rowMark)
	raw, err := os.ReadFile(resultsPath)
	if err != nil {
		return err
	}
	newRows, newOrder := parse(bytes.NewReader(raw), "")
	for _, name := range newOrder {
		if _, ok := rows[name]; !ok {
			order = append(order, name)
		}
		rows[name] = newRows[name]
	}
	if len(order) == 0 {
		return errors.New("no result rows")
	}
	return os.WriteFile(docPath, []byte(head+begin+"\n"+render(rows, order)+end+tail), 0o644)
}

// split cuts the document around the markers.
func split(s, begin, end string) (head, mid, tail string, err error) {
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		return "", "", "", fmt.Errorf("no %s ... %s markers", begin, end)
	}
	return s[:i], s[i+len(begin) : j], s[j+len(end):], nil
}

// parse reads rows, one JSON object per line after prefix (lines without
// it are skipped), in first-seen order; a later line replaces an earlier
// one of the same row.
func parse(r interface{ Read([]byte) (int, error) }, prefix string) (map[string]jepsen.Result, []string) {
	rows := map[string]jepsen.Result{}
	var order []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), prefix)
		if !ok {
			continue
		}
		line = strings.TrimSuffix(line, " -->")
		var res jepsen.Result
		if json.Unmarshal([]byte(line), &res) != nil || res.Row == "" {
			continue
		}
		if _, seen := rows[res.Row]; !seen {
			order = append(order, res.Row)
		}
		rows[res.Row] = res
	}
	return rows, order
}

// render writes the table, then each row's JSON as a hidden comment.
func render(rows map[string]jepsen.Result, order []string) string {
	var b strings.Builder
	b.WriteString("| row | fault | workload | nodes | ops | acked | unknown | lost | duplicated | violations | linearizable | recovery | verdict |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, name := range order {
		r := rows[name]
		verdict := "pass"
		if !r.Pass {
			verdict = "**FAIL**"
		}
		rec := fmt.Sprintf("%.1f s", float64(r.RecoveryMs)/1000)
		if r.RecoveryMs < 0 {
			rec = "none"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %d | %d | %d | %d | %d | %d | %d | %s | %s | %s |\n",
			r.Row, cell(r.Fault), cell(r.Workload), r.Nodes, r.Ops, r.Acked, r.Unknown, r.Lost, r.Duplicated, r.Violations, r.Linearizable, rec, verdict)
	}
	b.WriteString("\nWhat each row promised, how it was run, and what the checker saw:\n\n")
	for _, name := range order {
		r := rows[name]
		fmt.Fprintf(&b, "- `%s` — %s. Command: `%s`. %s\n", r.Row, cell(r.Promise), r.Command, cell(strings.TrimSpace(firstLine(r.Detail))))
	}
	b.WriteString("\n")
	for _, name := range order {
		r := rows[name]
		r.Detail = firstLine(r.Detail)
		line, _ := json.Marshal(r)
		fmt.Fprintf(&b, "%s%s -->\n", rowMark, line)
	}
	return b.String()
}

// cell makes text safe in a table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// firstLine keeps the first line of a detail (a failure's dump goes on).
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
