package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/bench"
)

// BenchLinksOptions configure `parley bench links`.
type BenchLinksOptions struct {
	BenchOptions
	// Mode is create or redirect.
	Mode string
	// Links is the number of codes created before redirects.
	Links int
	// CodePrefix starts every code the benchmark creates.
	CodePrefix string
	// Map names a file of "CODE URL" lines (HAProxy's map format) giving
	// the links redirects follow.
	Map string
	// Existing: the links of Map exist already; create nothing and do not
	// ask /readyz (the servers may be a peer such as HAProxy).
	Existing bool
}

// runBenchLinks is the action of `parley bench links`.
func runBenchLinks(ctx context.Context, e *Env, path string, args []string) error {
	o, err := ParseBenchLinks(path, args, e.getenv)
	if err != nil {
		return err
	}
	if err := o.signIn(e); err != nil {
		return err
	}
	return BenchLinks(ctx, o, e.Stdout, e.Stderr)
}

// ParseBenchLinks reads the flags of `parley bench links`.
func ParseBenchLinks(path string, args []string, getenv func(string) string) (BenchLinksOptions, error) {
	var o BenchLinksOptions
	fs := newFlagSet(path, "[flags]", `
Shorten URLs (--mode create) or follow short links (--mode redirect: GET
/s/CODE, answered with a redirect that is checked but not followed, sent
without a session as a browser does), and report throughput, latency
percentiles (50/66/75/80/90/95/98/99/100, as Apache Bench) and a per-second
timeline. For redirects, --links codes are created first and each request
picks one by a hash of its number.`)
	addBenchFlags(fs, &o.BenchOptions, orNoEnv(getenv))
	fs.Var(newChoiceValue(&o.Mode, bench.LinksRedirect, bench.LinksCreate, bench.LinksRedirect), "mode", "operations: create or `redirect`")
	fs.IntVar(&o.Links, "links", 1000, "`codes` created before redirects")
	fs.StringVar(&o.CodePrefix, "code-prefix", "bench-", "`prefix` of the codes (a run id follows)")
	fs.StringVar(&o.Map, "map", "", "redirect the links of this `file` of \"CODE URL\" lines (HAProxy's map format) instead of --links new ones")
	fs.BoolVar(&o.Existing, "existing", false, "the links of --map exist already: create none and skip the /readyz check (to measure a peer serving the same map)")
	if err := parseBench(fs, path, args, getenv, &o.BenchOptions); err != nil {
		return o, err
	}
	switch {
	case o.Links < 1:
		return o, usagef(path, "--links %d: want at least 1", o.Links)
	case o.Existing && o.Map == "":
		return o, usagef(path, "--existing needs --map")
	case o.Map != "" && o.Mode != bench.LinksRedirect:
		return o, usagef(path, "--map goes with --mode redirect")
	}
	return o, nil
}

// BenchLinks runs the links workload and prints the report to stdout
// (progress to stderr), writing the files asked for.
func BenchLinks(ctx context.Context, o BenchLinksOptions, stdout, stderr io.Writer) error {
	hc, done := benchHTTPClient(o.Clients, len(o.Servers))
	defer done()
	var links []bench.LinkTarget
	if o.Map != "" {
		var err error
		if links, err = readLinkMap(o.Map); err != nil {
			return err
		}
	}
	anon := make([]*client.Client, len(o.Servers))
	for i, s := range o.Servers {
		anon[i] = client.New(s, client.WithHTTPClient(hc))
	}
	clients := anon
	if !o.Existing {
		var err error
		if clients, err = readyClients(ctx, hc, o.Servers, o.Token); err != nil {
			return err
		}
	}
	w, err := bench.NewLinks(bench.LinksOptions{
		Clients: clients, Mode: o.Mode, Links: o.Links, CodePrefix: o.CodePrefix, Map: links, Existing: o.Existing,
	}, anon)
	if err != nil {
		return err
	}
	params := map[string]string{"servers": strings.Join(o.Servers, ",")}
	if o.Mode == bench.LinksRedirect {
		params["links"] = strconv.Itoa(len(w.Codes()))
	}
	return runBench(ctx, w, o.BenchOptions, params, stdout, stderr)
}

// readLinkMap reads a file of "CODE URL" lines; blank lines and lines
// starting with # are skipped.
func readLinkMap(name string) ([]bench.LinkTarget, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("--map: %w", err)
	}
	var out []bench.LinkTarget
	for n, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0 || strings.HasPrefix(f[0], "#"):
			continue
		case len(f) != 2:
			return nil, fmt.Errorf("--map %s line %d: want CODE URL", name, n+1)
		}
		out = append(out, bench.LinkTarget{Code: f[0], URL: f[1]})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--map %s: no links", name)
	}
	return out, nil
}
