package cli

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseBenchEtcdKV(t *testing.T) {
	const path = "parley-bench etcd-kv"
	t.Run("defaults match bench kv", func(t *testing.T) {
		o, err := ParseBenchEtcdKV(path, nil, envMap(map[string]string{"PARLEY_SERVER": "http://h:1"}))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(o.Servers, []string{defaultEtcdEndpoint}) || o.Clients != 16 || o.Duration != 10*time.Second ||
			o.ValueSize != 256 || o.Keys != 10000 || o.Mix != "put" || o.KeyPrefix != "bench/" {
			t.Errorf("options = %+v", o)
		}
	})
	t.Run("flags", func(t *testing.T) {
		o, err := ParseBenchEtcdKV(path, []string{
			"--endpoints", "http://127.0.0.1:1,http://127.0.0.1:2", "--endpoints", "http://127.0.0.1:3",
			"--clients", "64", "--requests", "500", "--value-size", "2000", "--keys", "10", "--mix", "mixed",
			"--csv", "a.csv", "--json", "a.json", "--svg", "a.svg", "--warmup", "1s", "-q",
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3"}
		if !slices.Equal(o.Servers, want) || o.Clients != 64 || o.Requests != 500 || o.Duration != 0 ||
			o.ValueSize != 2000 || o.Keys != 10 || o.Mix != "mixed" || o.CSV != "a.csv" || o.JSON != "a.json" ||
			o.SVG != "a.svg" || o.Warmup != time.Second || !o.Quiet {
			t.Errorf("options = %+v", o)
		}
	})
	t.Run("help shows endpoints, not servers", func(t *testing.T) {
		_, err := ParseBenchEtcdKV(path, []string{"-h"}, nil)
		h, ok := err.(*helpError)
		if !ok || !strings.Contains(h.text, "--endpoints") || strings.Contains(h.text, "--servers") || !strings.Contains(h.text, "--value-size") {
			t.Errorf("help = %v", err)
		}
	})
	t.Run("bad values", func(t *testing.T) {
		for _, args := range [][]string{
			{"--endpoints", "127.0.0.1:2379"}, {"--mix", "delete"}, {"--clients", "0"},
			{"--keys", "0"}, {"--duration", "0s"}, {"--value-size", "-1"},
		} {
			_, err := ParseBenchEtcdKV(path, args, nil)
			if _, ok := err.(*usageError); !ok || !strings.Contains(err.Error(), args[0]) {
				t.Errorf("%v: err = %v, want a usage error naming %s", args, err, args[0])
			}
		}
	})
}
