package faultfs_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/parley-chat/parley/internal/nemesis/faultfs"
)

// mustMount mounts a faultfs over a fresh directory and returns the mount
// point, the backing directory and the control socket's path; it skips
// unless FUSE can be used here (root, /dev/fuse).
func mustMount(t *testing.T) (mnt, backing, control string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a FUSE file system needs root")
	}
	if f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0); err != nil {
		t.Skipf("no FUSE here: %v", err)
	} else {
		f.Close()
	}
	dir := t.TempDir()
	mnt, backing, control = filepath.Join(dir, "mnt"), filepath.Join(dir, "backing"), filepath.Join(dir, "ctl")
	for _, d := range []string{mnt, backing} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	var faults faultfs.Faults
	srv, err := faultfs.Mount(backing, mnt, "faultfs-test", &faults)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", control)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = faultfs.Serve(ln, &faults) }()
	t.Cleanup(func() {
		ln.Close()
		if err := srv.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	return mnt, backing, control
}

func mustSend(t *testing.T, control, cmd string) faultfs.Counts {
	t.Helper()
	n, err := faultfs.Send(control, cmd)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return n
}

// The file system mirrors its backing directory and injects each fault
// only while it is on: failed fsyncs, failed reads of tables only, slow
// writes; a bad command is refused and changes nothing.
func TestFaultFS_InjectsWhatItIsTold(t *testing.T) {
	mnt, backing, control := mustMount(t)
	for _, name := range []string{"000001.sst", "000002.log"} {
		if err := os.WriteFile(filepath.Join(mnt, name), []byte("data"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(backing, "000001.sst")); err != nil || string(b) != "data" {
		t.Fatalf("backing file = %q, %v", b, err)
	}

	mustSend(t, control, "read-eio on")
	if _, err := os.ReadFile(filepath.Join(mnt, "000001.sst")); !errors.Is(err, syscall.EIO) {
		t.Errorf("read of a table with read-eio on: %v, want EIO", err)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "000002.log")); err != nil || string(b) != "data" {
		t.Errorf("read of a log with read-eio on = %q, %v, want it to work", b, err)
	}

	mustSend(t, control, "fsync-eio on")
	f, err := os.OpenFile(filepath.Join(mnt, "000002.log"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Errorf("fsync with fsync-eio on: %v, want EIO", err)
	}

	if _, err := faultfs.Send(control, "delay soon"); err == nil {
		t.Error("delay soon: accepted")
	}
	n := mustSend(t, control, "heal")
	if n.ReadsFailed != 1 || n.FsyncsFailed != 1 || n.Delayed != 0 {
		t.Errorf("counts = %+v, want 1 read and 1 fsync failed, none delayed", n)
	}
	if err := f.Sync(); err != nil {
		t.Errorf("fsync after heal: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "000001.sst")); err != nil || string(b) != "data" {
		t.Errorf("read of a table after heal = %q, %v", b, err)
	}

	mustSend(t, control, "delay 50ms")
	if _, err := f.Write([]byte("more")); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := mustSend(t, control, "delay 0"); n.Delayed < 2 {
		t.Errorf("delayed = %d after a write and an fsync, want 2 or more", n.Delayed)
	}
}
