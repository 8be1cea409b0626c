// Command redirectfloor answers GET /s/CODE with a 302 to the code's URL
// from a map file ("CODE URL" per line), and does nothing else: the least a
// Go server can do per redirect. scripts/bench/compare-http-floor.sh runs
// it with each HTTP server Parley could use (net/http, which serves the
// API, and fasthttp, which serves the links listener) beside HAProxy
// answering from the same map, to tell what the server library costs from
// what Parley's own code does. It is not part of the parley binary.
//
//	go run ./scripts/bench/redirectfloor --server fasthttp --addr 127.0.0.1:29002 --map codes.map
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "redirectfloor:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("redirectfloor", flag.ContinueOnError)
	server := fs.String("server", "nethttp", "HTTP server: nethttp or fasthttp")
	addr := fs.String("addr", "127.0.0.1:29001", "`host:port` to listen on")
	mapFile := fs.String("map", "", "`file` of \"CODE URL\" lines")
	if err := fs.Parse(args); err != nil {
		return err
	}
	codes, err := readMap(*mapFile)
	if err != nil {
		return err
	}
	switch *server {
	case "nethttp":
		// The timeouts of Parley's API listener (internal/node/http.go).
		srv := &http.Server{
			Addr: *addr, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 60 * time.Second,
			WriteTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second,
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				to, ok := codes[strings.TrimPrefix(r.URL.Path, "/s/")]
				if !ok {
					http.NotFound(w, r)
					return
				}
				h := w.Header()
				h["Cache-Control"] = []string{"no-store"}
				h["Location"] = []string{to}
				w.WriteHeader(http.StatusFound)
			}),
		}
		return srv.ListenAndServe()
	case "fasthttp":
		// The timeouts of Parley's links listener (internal/node/links.go).
		srv := &fasthttp.Server{
			ReadTimeout: 10 * time.Second, WriteTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second,
			NoDefaultServerHeader: true, NoDefaultContentType: true,
			Handler: func(ctx *fasthttp.RequestCtx) {
				to, ok := codes[strings.TrimPrefix(string(ctx.Path()), "/s/")]
				if !ok {
					ctx.SetStatusCode(fasthttp.StatusNotFound)
					return
				}
				ctx.Response.Header.Set("Cache-Control", "no-store")
				ctx.Response.Header.Set("Location", to)
				ctx.SetStatusCode(fasthttp.StatusFound)
			},
		}
		return srv.ListenAndServe(*addr)
	}
	return fmt.Errorf("--server %q: want nethttp or fasthttp", *server)
}

// readMap reads "CODE URL" lines.
func readMap(file string) (map[string]string, error) {
	if file == "" {
		return nil, errors.New("--map is required")
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	codes := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if code, url, ok := strings.Cut(strings.TrimSpace(sc.Text()), " "); ok {
			codes[code] = url
		}
	}
	return codes, sc.Err()
}
