package nemesis

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// mountTmpfs mounts a tmpfs of size bytes at dir, with source name (so
// leftovers can be found by name).
func mountTmpfs(name, dir string, size int64) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := syscall.Mount(name, dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		return fmt.Errorf("mount tmpfs at %s: %w", dir, err)
	}
	return nil
}

// unmountRun lazily unmounts every tmpfs and fault-injecting file system
// (faultfs) whose source belongs to run r, the latter first (they are
// mounted inside the former).
func unmountRun(r int) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	prefix := fmt.Sprintf("%s-%d-", Prefix, r)
	for _, fstype := range []string{"fuse.faultfs", "tmpfs"} {
		for _, line := range strings.Split(string(b), "\n") {
			// ... mountpoint(5th) ... - fstype source options
			pre, post, ok := strings.Cut(line, " - ")
			f, g := strings.Fields(pre), strings.Fields(post)
			if !ok || len(f) < 5 || len(g) < 2 || g[0] != fstype || !strings.HasPrefix(g[1], prefix) {
				continue
			}
			_ = syscall.Unmount(unescapeMount(f[4]), syscall.MNT_DETACH)
		}
	}
}

// unescapeMount undoes mountinfo's octal escapes of spaces and the like.
func unescapeMount(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

// DiskUsed returns the bytes used on n's data directory's tmpfs.
func (n *Node) DiskUsed() (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(n.DataDir, &st); err != nil {
		return 0, err
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize, nil
}

// fillerName is the file FillDisk writes beside n's data directory, on its
// tmpfs.
const fillerName = "nemesis-filler"

// FillDisk fills n's tmpfs with one file until only leave bytes are free,
// as another program filling the disk would, and returns the file's size.
// FreeDisk removes it. The node keeps writing meanwhile, so the free space
// read before the allocation may be gone by then: an allocation refused
// for want of space is tried again on a fresh reading, a few times.
func (n *Node) FillDisk(leave int64) (int64, error) {
	f, err := os.OpenFile(filepath.Join(filepath.Dir(n.DataDir), fillerName), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	for attempt := 1; ; attempt++ {
		var st syscall.Statfs_t
		if err := syscall.Statfs(n.DataDir, &st); err != nil {
			return 0, err
		}
		size := int64(st.Bavail)*st.Bsize - leave
		if size <= 0 {
			return 0, nil
		}
		// tmpfs gives back what a failed fallocate took.
		err := syscall.Fallocate(int(f.Fd()), 0, 0, size)
		if err == nil {
			return size, nil
		}
		if !errors.Is(err, syscall.ENOSPC) || attempt == 10 {
			return 0, fmt.Errorf("fill the disk of %s (%d bytes, attempt %d): %w", n.ID, size, attempt, err)
		}
	}
}

// FreeDisk removes what FillDisk wrote.
func (n *Node) FreeDisk() error {
	err := os.Remove(filepath.Join(filepath.Dir(n.DataDir), fillerName))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
