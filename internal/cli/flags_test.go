package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/compat"
	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/ratelimit"
)

func TestParseServe(t *testing.T) {
	t.Run("defaults are config.Default", func(t *testing.T) {
		o, err := ParseServe("parley serve", nil, envMap(nil))
		if err != nil {
			t.Fatal(err)
		}
		d := config.Default()
		if o.Config.ID != d.ID || o.Config.DataDir != d.DataDir || o.Config.HTTPAddr != d.HTTPAddr ||
			o.Config.ClusterAddr != d.ClusterAddr || o.Config.Partitions != d.Partitions ||
			o.Config.TickInterval != d.TickInterval || o.Config.Join != nil {
			t.Errorf("config = %+v, want the defaults %+v", o.Config, d)
		}
		if o.Log.Level != slog.LevelInfo || o.Log.Format != "text" || o.ShutdownTimeout != 10*time.Second {
			t.Errorf("log = %+v, shutdown %s", o.Log, o.ShutdownTimeout)
		}
	})

	t.Run("every flag maps to its setting", func(t *testing.T) {
		o, err := ParseServe("parley serve", []string{
			"--id", "n2", "--data-dir", "d2", "--http", "127.0.0.1:7080", "--cluster", "127.0.0.1:7081",
			"--advertise", "10.0.0.2:7081", "--advertise-http", "10.0.0.2:7080", "--public-url", "https://p.example",
			"--join", "a:1,b:2", "--join", "c:3", "--zone", "z1", "--standby", "--partitions", "8",
			"--replication-factor", "5", "--dead-after", "1m", "--dedup-window", "5m", "--history-retention", "24h",
			"--registration", "closed", "--cache-size", "50", "--cache-policy", "lfu", "--rate-limit", "1000",
			"--allowed-origin", "https://a.example", "--allowed-origin", "https://b.example",
			"--log-level", "debug", "--log-format", "json", "--tick", "10ms", "--election-ticks", "5", "--compaction-threshold", "500",
			"--limit-posts", "5/s", "--limit-queue-sends", "off", "--limit-room-creates", "2/min", "--limit-queue-creates", "3/h",
			"--limit-link-creates", "4/15m", "--limit-logins-per-user", "6/min", "--limit-streams", "7", "--limit-long-polls", "0",
			"--limit-searches", "8/min", "--search-dir", "/dev/shm/s", "--no-search-index", "--search-replicas", "2",
		}, envMap(nil))
		if err != nil {
			t.Fatal(err)
		}
		c := o.Config
		want := config.Default()
		want.ID, want.DataDir, want.HTTPAddr, want.ClusterAddr = "n2", "d2", "127.0.0.1:7080", "127.0.0.1:7081"
		want.Advertise, want.AdvertiseHTTP, want.PublicURL = "10.0.0.2:7081", "10.0.0.2:7080", "https://p.example"
		want.Join, want.Zone, want.Standby = []string{"a:1", "b:2", "c:3"}, "z1", true
		want.Partitions, want.ReplicationFactor = 8, 5
		want.DeadAfter, want.DedupWindow, want.HistoryRetention = time.Minute, 5*time.Minute, 24*time.Hour
		want.Registration, want.CacheSize, want.CachePolicy, want.RateLimit = "closed", 50, "lfu", 1000
		want.AllowedOrigins = []string{"https://a.example", "https://b.example"}
		want.TickInterval, want.ElectionTicks, want.CompactionThreshold = 10*time.Millisecond, 5, 500
		want.SearchDir, want.NoSearchIndex, want.SearchReplicas = "/dev/shm/s", true, 2
		want.Limits = config.Limits{
			Posts: ratelimit.Rate{N: 5, Per: time.Second}, RoomCreates: ratelimit.Rate{N: 2, Per: time.Minute},
			QueueCreates: ratelimit.Rate{N: 3, Per: time.Hour}, LinkCreates: ratelimit.Rate{N: 4, Per: 15 * time.Minute},
			LoginsPerUser: ratelimit.Rate{N: 6, Per: time.Minute}, Streams: 7,
			Searches: ratelimit.Rate{N: 8, Per: time.Minute},
		}
		if !reflect.DeepEqual(c, want) {
			t.Errorf("config =\n%+v\nwant\n%+v", c, want)
		}
		if o.Log.Level != slog.LevelDebug || o.Log.Format != "json" {
			t.Errorf("log = %+v", o.Log)
		}
	})

	t.Run("environment fills what flags leave alone", func(t *testing.T) {
		env := map[string]string{
			"PARLEY_DATA_DIR": "/env/data", "PARLEY_JOIN": "x:1, y:2", "PARLEY_STANDBY": "true",
			"PARLEY_DEAD_AFTER": "45s", "PARLEY_CACHE_POLICY": "fifo", "PARLEY_TLS_CERT": "c.pem", "PARLEY_TLS_KEY": "k.pem",
			"PARLEY_ID": "env-node", "PARLEY_LOG_LEVEL": "error", "PARLEY_LIMIT_POSTS": "9/s",
		}
		o, err := ParseServe("parley serve", nil, envMap(env))
		if err != nil {
			t.Fatal(err)
		}
		c := o.Config
		if c.DataDir != "/env/data" || !slices.Equal(c.Join, []string{"x:1", "y:2"}) || !c.Standby ||
			c.DeadAfter != 45*time.Second || c.CachePolicy != "fifo" || c.ID != "env-node" ||
			o.TLSCert != "c.pem" || o.TLSKey != "k.pem" || o.Log.Level != slog.LevelError ||
			c.Limits.Posts != (ratelimit.Rate{N: 9, Per: time.Second}) {
			t.Errorf("options = %+v", o)
		}
	})

	t.Run("a flag wins over its variable", func(t *testing.T) {
		env := map[string]string{"PARLEY_DATA_DIR": "/env/data", "PARLEY_JOIN": "x:1", "PARLEY_PARTITIONS": "32"}
		o, err := ParseServe("parley serve", []string{"--data-dir", "/flag/data", "--join", "f:1", "--partitions", "2"}, envMap(env))
		if err != nil {
			t.Fatal(err)
		}
		if o.Config.DataDir != "/flag/data" || !slices.Equal(o.Config.Join, []string{"f:1"}) || o.Config.Partitions != 2 {
			t.Errorf("config = %+v", o.Config)
		}
	})

	t.Run("bad values are rejected naming the flag", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			args []string
			env  map[string]string
			want []string // substrings of the message
		}{
			{"not a number", []string{"--partitions", "many"}, nil, []string{"--partitions"}},
			{"bad duration", []string{"--dead-after", "soon"}, nil, []string{"--dead-after"}},
			{"bad variable", nil, map[string]string{"PARLEY_PARTITIONS": "many"}, []string{"PARLEY_PARTITIONS", "--partitions"}},
			{"bad bool variable", nil, map[string]string{"PARLEY_STANDBY": "perhaps"}, []string{"PARLEY_STANDBY", "--standby"}},
			{"out of range", []string{"--partitions", "0"}, nil, []string{"partitions"}},
			{"out of range variable", nil, map[string]string{"PARLEY_REPLICATION_FACTOR": "9"}, []string{"replication-factor"}},
			{"bad choice", []string{"--cache-policy", "random"}, nil, []string{"--cache-policy", "lru, lfu, fifo"}},
			{"bad registration", []string{"--registration", "maybe"}, nil, []string{"--registration"}},
			{"bad log level", []string{"--log-level", "loud"}, nil, []string{"--log-level"}},
			{"bad log format", []string{"--log-format", "xml"}, nil, []string{"--log-format"}},
			{"bad address", []string{"--http", "7070"}, nil, []string{"http"}},
			{"bad id", []string{"--id", "no spaces"}, nil, []string{"id"}},
			{"cert without key", []string{"--tls-cert", "c.pem"}, nil, []string{"--tls-cert", "--tls-key"}},
			{"partial mutual TLS", []string{"--cluster-tls-cert", "c.pem", "--cluster-tls-key", "k.pem"}, nil, []string{"--cluster-tls-ca"}},
			{"bad rate", []string{"--limit-posts", "lots"}, nil, []string{"--limit-posts", "N/PERIOD"}},
			{"bad rate period", []string{"--limit-room-creates", "5/fortnight"}, nil, []string{"--limit-room-creates"}},
			{"negative count", []string{"--limit-streams", "-1"}, nil, []string{"limit-streams"}},
			{"unknown flag", []string{"--colour"}, nil, []string{"--colour"}},
			{"stray argument", []string{"now"}, nil, []string{`"now"`}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := ParseServe("parley serve", tc.args, envMap(tc.env))
				var ue *usageError
				if !errors.As(err, &ue) {
					t.Fatalf("err = %v, want a usage error", err)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("message %q does not mention %q", err, w)
					}
				}
			})
		}
	})

	t.Run("help lists flags with defaults and variables, not hidden ones", func(t *testing.T) {
		_, err := ParseServe("parley serve", []string{"-h"}, envMap(nil))
		var h *helpError
		if !errors.As(err, &h) {
			t.Fatalf("err = %v, want help", err)
		}
		for _, w := range []string{"--data-dir directory", "(default parley-data)", "[$PARLEY_DATA_DIR]", "--join", "--cluster-tls-ca", "--log-format", "(default 16)"} {
			if !strings.Contains(h.text, w) {
				t.Errorf("help lacks %q:\n%s", w, h.text)
			}
		}
		if !strings.Contains(h.text, "--compaction-threshold") {
			t.Errorf("help lacks --compaction-threshold, the Raft log's retention operators may tune")
		}
		for _, hidden := range []string{"--tick", "--election-ticks"} {
			if strings.Contains(h.text, hidden) {
				t.Errorf("help shows hidden %s", hidden)
			}
		}
	})
}

func TestParseDev(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		o, err := ParseDev("parley dev", nil, envMap(nil))
		if err != nil {
			t.Fatal(err)
		}
		if o.Nodes != 3 || o.BasePort != 7070 || o.DataDir != "parley-dev" || o.Partitions != 16 || o.ReplicationFactor != 3 {
			t.Errorf("options = %+v", o)
		}
	})
	t.Run("flags, variables and node layout", func(t *testing.T) {
		o, err := ParseDev("parley dev", []string{"--nodes", "5", "--partitions", "4"}, envMap(map[string]string{"PARLEY_DEV_BASE_PORT": "9000", "PARLEY_DEV_NODES": "2"}))
		if err != nil {
			t.Fatal(err)
		}
		if o.Nodes != 5 || o.BasePort != 9000 || o.Partitions != 4 {
			t.Fatalf("options = %+v", o)
		}
		c := o.nodeConfig(2)
		if c.ID != "n3" || c.HTTPAddr != "127.0.0.1:9004" || c.ClusterAddr != "127.0.0.1:9005" ||
			!slices.Equal(c.Join, []string{"127.0.0.1:9001"}) || c.DataDir != "parley-dev/n3" {
			t.Errorf("node 3 config = %+v", c)
		}
		if c := o.nodeConfig(0); c.Join != nil {
			t.Errorf("node 1 joins %v; it should create", c.Join)
		}
	})
	t.Run("bad values", func(t *testing.T) {
		for _, args := range [][]string{{"--nodes", "0"}, {"--base-port", "65530", "--nodes", "5"}, {"--nodes", "x"}} {
			if _, err := ParseDev("parley dev", args, envMap(nil)); err == nil || !strings.Contains(err.Error(), args[0]) {
				t.Errorf("%v: err = %v, want one naming %s", args, err, args[0])
			}
		}
	})
}

func TestParseBenchKV(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		o, err := ParseBenchKV("parley bench kv", nil, envMap(nil))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(o.Servers, []string{defaultServer}) || o.Clients != 16 || o.Duration != 10*time.Second ||
			o.ValueSize != 256 || o.Keys != 10000 || o.Mix != "put" {
			t.Errorf("options = %+v", o)
		}
	})
	t.Run("servers fall back to PARLEY_SERVER", func(t *testing.T) {
		o, err := ParseBenchKV("parley bench kv", nil, envMap(map[string]string{"PARLEY_SERVER": "http://h:1"}))
		if err != nil || !slices.Equal(o.Servers, []string{"http://h:1"}) {
			t.Errorf("servers = %v, %v", o.Servers, err)
		}
		o, err = ParseBenchKV("parley bench kv", []string{"--servers", "http://a:1,http://b:2"}, envMap(map[string]string{"PARLEY_SERVER": "http://h:1"}))
		if err != nil || !slices.Equal(o.Servers, []string{"http://a:1", "http://b:2"}) {
			t.Errorf("servers = %v, %v", o.Servers, err)
		}
	})
	t.Run("requests alone lifts the time limit", func(t *testing.T) {
		o, err := ParseBenchKV("parley bench kv", []string{"--requests", "100"}, envMap(nil))
		if err != nil || o.Requests != 100 || o.Duration != 0 {
			t.Errorf("requests %d duration %s, %v", o.Requests, o.Duration, err)
		}
		o, err = ParseBenchKV("parley bench kv", []string{"--requests", "100", "--duration", "2s"}, envMap(nil))
		if err != nil || o.Requests != 100 || o.Duration != 2*time.Second {
			t.Errorf("requests %d duration %s, %v", o.Requests, o.Duration, err)
		}
	})
	t.Run("bad values", func(t *testing.T) {
		for _, tc := range []struct{ args []string }{
			{[]string{"--mix", "delete"}}, {[]string{"--clients", "0"}}, {[]string{"--servers", "localhost:7070"}},
			{[]string{"--keys", "0"}}, {[]string{"--duration", "0s"}}, {[]string{"--value-size", "-1"}},
		} {
			_, err := ParseBenchKV("parley bench kv", tc.args, envMap(nil))
			if err == nil || !strings.Contains(err.Error(), tc.args[0]) {
				t.Errorf("%v: err = %v, want one naming %s", tc.args, err, tc.args[0])
			}
		}
	})
}

func TestFlagSet_Parse(t *testing.T) {
	newFS := func() (*flagSet, *uint64, *bool) {
		fs := newFlagSet("parley test", "A B", "")
		v := fs.Uint64("if-version", 0, "")
		b := fs.Bool("v", false, "")
		return fs, v, b
	}
	for _, tc := range []struct {
		name    string
		args    []string
		pos     []string
		version uint64
		verbose bool
	}{
		{"flags first", []string{"--if-version", "3", "k", "v"}, []string{"k", "v"}, 3, false},
		{"flags between", []string{"k", "--if-version", "3", "v"}, []string{"k", "v"}, 3, false},
		{"flags last", []string{"k", "v", "-v"}, []string{"k", "v"}, 0, true},
		{"dash is a value", []string{"k", "-"}, []string{"k", "-"}, 0, false},
		{"double dash ends flags", []string{"k", "--", "-v"}, []string{"k", "-v"}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, v, b := newFS()
			pos, err := fs.parse(tc.args, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(pos, tc.pos) || *v != tc.version || *b != tc.verbose {
				t.Errorf("pos %q version %d verbose %v, want %q %d %v", pos, *v, *b, tc.pos, tc.version, tc.verbose)
			}
		})
	}
}

func TestVersionText(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/parley-chat/parley", Version: "v1.4.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "5bf93d3e0c"}, {Key: "vcs.time", Value: "2026-11-20T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	want := "parley v1.4.0\ncommit 5bf93d3e0c (2026-11-20T10:00:00Z), with uncommitted changes\ngo1.26.8 " + runtime.GOOS + "/" + runtime.GOARCH + "\n" +
		fmt.Sprintf("internal protocol %d (speaks %d to %d), data format %d (reads %d to %d)\n",
			compat.Protocol, compat.MinProtocol, compat.Protocol, compat.DataFormat, compat.MinDataFormat, compat.DataFormat)
	if got := versionText(bi, true); got != want {
		t.Errorf("versionText = %q, want %q", got, want)
	}
	if got := versionText(nil, false); !strings.HasPrefix(got, "parley unknown\ncommit unknown\n"+runtime.Version()) {
		t.Errorf("versionText without build info = %q", got)
	}
}

// TestFlagSet_HelpDefaults checks each default is shown once: by the flag
// printer, or by a usage that explains it.
func TestFlagSet_HelpDefaults(t *testing.T) {
	fs := newFlagSet("parley test", "[flags]", "")
	fs.String("plain", "x", "a `value`")
	fs.String("explained", "http://localhost:7070", "base `URL` (default $PARLEY_SERVER or http://localhost:7070)")
	h := fs.help()
	if !strings.Contains(h, "a value (default x)\n") {
		t.Errorf("help lacks the plain flag's default:\n%s", h)
	}
	if n := strings.Count(h, "(default"); n != 2 {
		t.Errorf("help shows %d defaults, want 2:\n%s", n, h)
	}
	for _, path := range [][]string{{"bench", "kv"}, {"bench", "chat-post"}, {"serve"}, {"chat"}} {
		r := run(context.Background(), nil, "", append(path, "-h")...)
		for l := range strings.Lines(r.stdout) {
			if strings.Count(l, "(default") > 1 {
				t.Errorf("parley %s -h shows a default twice: %q", strings.Join(path, " "), l)
			}
		}
	}
}

func TestRun_Dispatch(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"no command shows help", nil, 2, "", "Usage: parley <command>"},
		{"help", []string{"-h"}, 0, "Running nodes:", ""},
		{"help lists client commands", []string{"help"}, 0, "queue", ""},
		{"unknown command", []string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{"group without subcommand", []string{"kv"}, 2, "", "Usage: parley kv <command>"},
		{"unknown subcommand", []string{"kv", "cas"}, 2, "", `unknown command "cas"`},
		{"leaf help", []string{"kv", "get", "-h"}, 0, "--stale", ""},
		{"version", []string{"--version"}, 0, "parley ", ""},
		{"root help names --version", []string{"-h"}, 0, "parley --version", ""},
		{"missing argument", []string{"kv", "get"}, 2, "", "want KEY"},
		{"put without a value", []string{"kv", "put", "k"}, 2, "", "want KEY VALUE"},
		{"bad server URL", []string{"kv", "get", "k", "--server", "localhost:7070"}, 2, "", "--server"},
		{"unreachable server", []string{"kv", "get", "k", "--server", "http://127.0.0.1:1"}, 1, "", "(unreachable)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(ctx, nil, "", tc.args...)
			if r.code != tc.code || !strings.Contains(r.stdout, tc.stdout) || !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("exit %d stdout %q stderr %q; want exit %d, stdout with %q, stderr with %q",
					r.code, r.stdout, r.stderr, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}
