package bench

import (
	"context"
	"fmt"
	"os"
	"testing"
)

func TestFsync_Run(t *testing.T) {
	for _, files := range []int{1, 3} {
		t.Run(fmt.Sprintf("files=%d", files), func(t *testing.T) {
			dir := t.TempDir()
			w, err := NewFsync(FsyncOptions{Dir: dir, Size: 256, Files: files})
			if err != nil {
				t.Fatal(err)
			}
			names := w.Files()
			if len(names) != files {
				t.Fatalf("%d files, want %d", len(names), files)
			}
			rep, err := Run(context.Background(), w, Options{Workers: files, Requests: 20 * files})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Workload != "fsync" || rep.Ops != int64(20*files) || rep.Errors != 0 || rep.OpsPerS <= 0 ||
				rep.Latency.At(50) <= 0 || rep.Latency.MaxMs < rep.Latency.At(99) {
				t.Errorf("report: workload %s ops %d errors %d ops/s %.0f p50 %.3f p99 %.3f max %.3f",
					rep.Workload, rep.Ops, rep.Errors, rep.OpsPerS, rep.Latency.At(50), rep.Latency.At(99), rep.Latency.MaxMs)
			}
			var total int64
			for _, name := range names {
				fi, err := os.Stat(name)
				if err != nil {
					t.Fatal(err)
				}
				total += fi.Size()
			}
			if total != int64(20*files*256) {
				t.Errorf("files hold %d bytes, want %d", total, 20*files*256)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("Close left %d files behind", len(left))
			}
		})
	}
}

func TestNewFsync_Invalid(t *testing.T) {
	for name, o := range map[string]FsyncOptions{
		"no dir":        {Size: 1},
		"empty write":   {Dir: t.TempDir(), Size: 0},
		"negative file": {Dir: t.TempDir(), Size: 1, Files: -1},
		"missing dir":   {Dir: t.TempDir() + "/missing", Size: 1},
	} {
		t.Run(name, func(t *testing.T) {
			if w, err := NewFsync(o); err == nil {
				_ = w.Close()
				t.Error("accepted")
			}
		})
	}
}
