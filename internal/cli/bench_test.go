package cli

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/bench"
)

func TestBenchKV_OneSecond(t *testing.T) {
	url, _ := startServe(t)
	token := signUp(t, url)
	dir := t.TempDir()
	for _, mix := range []string{bench.MixPut, bench.MixMixed} {
		t.Run(mix, func(t *testing.T) {
			o := BenchKVOptions{
				BenchOptions: BenchOptions{
					Servers: []string{url}, Clients: 4, Duration: time.Second, Timeout: 5 * time.Second, Token: token,
					CSV: filepath.Join(dir, mix+".csv"), JSON: filepath.Join(dir, mix+".json"), SVG: filepath.Join(dir, mix+".svg"),
				},
				Mix: mix, ValueSize: 200, Keys: 50, KeyPrefix: "bench/",
			}
			var out, errOut bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := BenchKV(ctx, o, &out, &errOut); err != nil {
				t.Fatal(err)
			}
			for _, w := range []string{"Workload: kv/" + mix, "Operations per second:", "  99%", " 100%", "Timeline"} {
				if !strings.Contains(strings.Join(strings.Fields(out.String()), " "), strings.Join(strings.Fields(w), " ")) {
					t.Errorf("report lacks %q:\n%s", w, out.String())
				}
			}

			var rep bench.Report
			mustDecode(t, o.JSON, func(b []byte) error { return json.Unmarshal(b, &rep) })
			if rep.Ops == 0 || rep.Errors != 0 || rep.Workload != "kv/"+mix || len(rep.Latency.Percentiles) != 9 {
				t.Errorf("JSON report: ops %d errors %d workload %s percentiles %d; kinds %v",
					rep.Ops, rep.Errors, rep.Workload, len(rep.Latency.Percentiles), rep.ErrorKinds)
			}

			var rows [][]string
			mustDecode(t, o.CSV, func(b []byte) (err error) { rows, err = csv.NewReader(bytes.NewReader(b)).ReadAll(); return err })
			if len(rows) < 3 || rows[0][0] != "second" || rows[len(rows)-1][0] != "total" || len(rows[0]) != 15 {
				t.Errorf("CSV = %v", rows)
			}

			mustDecode(t, o.SVG, func(b []byte) error {
				var doc struct{ XMLName xml.Name }
				if err := xml.Unmarshal(b, &doc); err != nil {
					return err
				}
				if doc.XMLName.Local != "svg" || !bytes.Contains(b, []byte("<polyline")) {
					t.Errorf("SVG root %s, polyline %v", doc.XMLName.Local, bytes.Contains(b, []byte("<polyline")))
				}
				return nil
			})
		})
	}
}

func TestBenchKV_NotReady(t *testing.T) {
	o, err := ParseBenchKV("parley bench kv", []string{"--servers", "http://127.0.0.1:1", "--duration", "1s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = BenchKV(context.Background(), o, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("err = %v, want one naming the server", err)
	}
}

// mustDecode reads file and checks it with decode.
func mustDecode(t *testing.T, file string, decode func([]byte) error) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := decode(b); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}
