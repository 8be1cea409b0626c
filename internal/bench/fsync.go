package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// FsyncOptions shape the fsync workload.
type FsyncOptions struct {
	// Dir is the directory holding the temporary files: put it on the disk
	// whose fsync time matters (where the nodes keep their data).
	Dir string
	// Size is the number of bytes written before each sync.
	Size int
	// Files is the number of files, each appended to and synced by its own
	// worker, to see what concurrent writers do to one another's sync time
	// (three nodes on one machine sync three WALs at once). Default 1.
	Files int
}

// Fsync is the disk baseline: each operation appends Size bytes to a file
// and calls fsync on it, as a write-ahead log without preallocation does for
// every commit. Parley's performance targets are stated as ratios to this
// time measured in the same run. Run it with Workers equal to Files, so that
// each file has one writer; Close removes the files.
type Fsync struct {
	o     FsyncOptions
	buf   []byte
	files []*os.File
}

// Compile-time check that Fsync is a workload.
var _ Workload = (*Fsync)(nil)

// NewFsync checks o and creates the temporary files under o.Dir.
func NewFsync(o FsyncOptions) (*Fsync, error) {
	if o.Files == 0 {
		o.Files = 1
	}
	switch {
	case o.Dir == "":
		return nil, errors.New("fsync workload: no directory")
	case o.Size < 1:
		return nil, fmt.Errorf("fsync workload: size %d: want at least 1 byte", o.Size)
	case o.Files < 1:
		return nil, fmt.Errorf("fsync workload: files %d: want at least 1", o.Files)
	}
	f := &Fsync{o: o, buf: make([]byte, o.Size)}
	for i := range f.buf {
		f.buf[i] = 'a' + byte(i%26)
	}
	for range o.Files {
		file, err := os.CreateTemp(o.Dir, "parley-fsync-*.tmp")
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("fsync workload: %w", err)
		}
		f.files = append(f.files, file)
	}
	return f, nil
}

// Name implements Workload.
func (f *Fsync) Name() string { return "fsync" }

// Op implements Workload: worker appends to file worker % Files and syncs it.
func (f *Fsync) Op(ctx context.Context, worker, i int) error {
	file := f.files[worker%len(f.files)]
	if _, err := file.Write(f.buf); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if err := file.Sync(); err != nil {
		return fmt.Errorf("fsync: %w", err)
	}
	return nil
}

// Files returns the names of the temporary files, for tests and reports.
func (f *Fsync) Files() []string {
	names := make([]string, len(f.files))
	for i, file := range f.files {
		names[i] = file.Name()
	}
	return names
}

// Close closes and removes the temporary files.
func (f *Fsync) Close() error {
	var errs []error
	for _, file := range f.files {
		errs = append(errs, file.Close(), os.Remove(file.Name()))
	}
	f.files = nil
	return errors.Join(errs...)
}
