package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/backup"
	"github.com/parley-chat/parley/internal/node"
)

// backupAttempts bounds the tries of one group's section.
const backupAttempts = 5

// runBackup is `parley backup --out FILE`, and `parley backup verify FILE`.
func runBackup(ctx context.Context, e *Env, path string, args []string) error {
	if len(args) > 0 && args[0] == "verify" {
		return runBackupVerify(ctx, e, path+" verify", args[1:])
	}
	var co clientOptions
	var out string
	fs := newFlagSet(path, "--out FILE [flags]", `
Write a backup of the whole cluster to FILE (admin only): the metadata
group and every partition, each read at one applied index after a
linearizable read barrier, with a SHA-256 per section and one over the
file. Writes keep being served while it runs. A write acknowledged before
the backup started is in it; one acknowledged while it runs may or may not
be, partition by partition (docs/BACKUP.md). The file is written to
FILE.partial and renamed when whole. Progress goes to standard error when
it is a terminal.

'parley backup verify FILE' checks a backup file's every checksum.
'parley restore --from FILE' seeds the first node of a new cluster from it.`)
	addClientFlags(fs, &co)
	if f := fs.Lookup("timeout"); f != nil { // a backup outlasts an API call
		f.DefValue = "1h0m0s"
		_ = f.Value.Set(f.DefValue)
	}
	fs.StringVar(&out, "out", "", "write the backup to this `file` (required)")
	if _, err := parseClient(fs, &co, e, args, 0, 0); err != nil {
		return err
	}
	if out == "" {
		return usagef(path, "--out FILE is required")
	}
	ctx, cancel := context.WithTimeout(ctx, co.Timeout)
	defer cancel()
	c := co.newClient()
	var m *client.BackupManifest
	if err := retry(ctx, func() (err error) { m, err = c.BackupManifest(ctx); return err }); err != nil {
		return err
	}
	sum, err := writeBackup(ctx, e, c, m, out)
	if err != nil {
		return err
	}
	var keys, bytes uint64
	for _, s := range sum {
		keys, bytes = keys+s.Keys, bytes+s.Bytes
	}
	fmt.Fprintf(e.Stdout, "backup of cluster %s written to %s: %s, %s, %s of state\n",
		m.ClusterID, out, plural(len(sum), "group"), plural(int(keys), "key"), byteSize(bytes))
	return nil
}

// writeBackup writes the file through FILE.partial, renamed once whole.
func writeBackup(ctx context.Context, e *Env, c *client.Client, m *client.BackupManifest, out string) (_ []backup.SectionInfo, err error) {
	partial := out + ".partial"
	f, err := os.OpenFile(partial, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", partial, err)
	}
	spool, err := os.CreateTemp(filepath.Dir(out), ".parley-backup-section-*")
	if err != nil {
		_ = f.Close()
		_ = os.Remove(partial)
		return nil, err
	}
	defer func() {
		_ = spool.Close()
		_ = os.Remove(spool.Name())
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(partial)
		}
	}()
	w, err := backup.NewWriter(f, backup.Header{DataFormat: m.DataFormat, ClusterID: m.ClusterID, Hash: m.Hash,
		Partitions: m.Partitions, ReplicationFactor: m.ReplicationFactor, CreatedMs: time.Now().UnixMilli()})
	if err != nil {
		return nil, err
	}
	prog := newProgress(e, m.Partitions+1)
	var infos []backup.SectionInfo
	for g, ok := w.Next(); ok; g, ok = w.Next() {
		if err := fetchSection(ctx, c, g, spool, prog); err != nil {
			prog.done()
			return nil, err
		}
		info, err := w.CopySection(spool)
		if err != nil {
			prog.done()
			return nil, err
		}
		infos = append(infos, info)
		prog.group(info)
	}
	prog.done()
	if err := w.Close(); err != nil {
		return nil, err
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	if err := os.Rename(partial, out); err != nil {
		return nil, err
	}
	return infos, nil
}

// fetchSection streams group g's section into spool and checks it, trying
// again when the stream breaks or fails its check; on success spool is
// rewound to the section's start.
func fetchSection(ctx context.Context, c *client.Client, g uint64, spool *os.File, prog *progress) error {
	var last error
	for attempt := range backupAttempts {
		if attempt > 0 {
			if err := sleepCtx(ctx, time.Duration(attempt)*200*time.Millisecond); err != nil {
				return fmt.Errorf("backup of group %d: %w (last try: %w)", g, err, last)
			}
		}
		if err := spool.Truncate(0); err != nil {
			return err
		}
		if _, err := spool.Seek(0, io.SeekStart); err != nil {
			return err
		}
		var body io.ReadCloser
		err := retry(ctx, func() (err error) { body, err = c.BackupGroup(ctx, g); return err })
		if err != nil {
			if ce, ok := errors.AsType[*client.Error](err); ok && !ce.Retryable {
				return err
			}
			last = err
			continue
		}
		_, err = io.Copy(spool, io.TeeReader(body, prog))
		_ = body.Close()
		if err == nil {
			if _, err = spool.Seek(0, io.SeekStart); err == nil {
				_, err = backup.CheckSection(spool)
			}
		}
		if err == nil {
			_, err = spool.Seek(0, io.SeekStart)
			return err
		}
		last = err
	}
	return fmt.Errorf("backup of group %d failed %d times: %w", g, backupAttempts, last)
}

// progress shows the backup's progress on standard error when it is a
// terminal, one line rewritten in place.
type progress struct {
	w      io.Writer // nil: no terminal, no progress
	groups int
	doneN  int
	bytes  uint64
	shown  time.Time
}

func newProgress(e *Env, groups int) *progress {
	p := &progress{groups: groups}
	if e.isTerminal(e.Stderr) {
		p.w = e.Stderr
	}
	return p
}

// Write counts streamed bytes (io.Writer, for a TeeReader).
func (p *progress) Write(b []byte) (int, error) {
	p.bytes += uint64(len(b))
	if p.w != nil && time.Since(p.shown) > 200*time.Millisecond {
		p.show()
	}
	return len(b), nil
}

// group notes a finished section.
func (p *progress) group(backup.SectionInfo) {
	p.doneN++
	if p.w != nil {
		p.show()
	}
}

func (p *progress) show() {
	p.shown = time.Now()
	const width = 30
	fill := width * p.doneN / max(p.groups, 1)
	bar := make([]byte, width)
	for i := range bar {
		bar[i] = '.'
		if i < fill {
			bar[i] = '#'
		}
	}
	fmt.Fprintf(p.w, "\r[%s] %d/%d groups, %s", bar, p.doneN, p.groups, byteSize(p.bytes))
}

// done ends the progress line.
func (p *progress) done() {
	if p.w != nil {
		fmt.Fprintln(p.w)
	}
}

// runBackupVerify is `parley backup verify FILE`.
func runBackupVerify(_ context.Context, e *Env, path string, args []string) error {
	var asJSON bool
	fs := newFlagSet(path, "FILE [flags]", `
Check a backup file without any server: the header's, every section's and
the whole file's SHA-256, the records and their order. Prints what the
file holds: the source cluster, and for every group its applied index,
keys and bytes. Exits non-zero, saying where, when anything does not
match.`)
	fs.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	pos, err := fs.parse(args, e.getenv)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef(path, "want FILE, got %d argument(s)", len(pos))
	}
	f, err := os.Open(pos[0])
	if err != nil {
		return err
	}
	defer f.Close()
	sum, err := backup.Verify(f)
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	if asJSON {
		return printJSON(e.Stdout, sum)
	}
	return writeBackupSummary(e.Stdout, pos[0], sum)
}

// writeBackupSummary prints a verified file's summary.
func writeBackupSummary(w io.Writer, name string, sum *backup.Summary) error {
	h := sum.Header
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s: backup of cluster %s taken %s\n", name, h.ClusterID, time.UnixMilli(h.CreatedMs).UTC().Format(time.RFC3339))
	fmt.Fprintf(tw, "format %d, data format %d, %s, replication factor %d\n\n", h.FormatVersion, h.DataFormat, plural(h.Partitions, "partition"), h.ReplicationFactor)
	fmt.Fprintln(tw, "GROUP\tAPPLIED\tKEYS\tBYTES")
	var keys, bytes uint64
	for _, s := range sum.Sections {
		g := fmt.Sprint(s.Group)
		if s.Group == 0 {
			g = "0 (metadata)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\n", g, s.Applied, s.Keys, s.Bytes)
		keys, bytes = keys+s.Keys, bytes+s.Bytes
	}
	fmt.Fprintf(tw, "\n%s, %s, %s of state; file %s, sha256 %s\n", plural(len(sum.Sections), "group"), plural(int(keys), "key"), byteSize(bytes), byteSize(uint64(sum.FileBytes)), sum.SHA256)
	fmt.Fprintln(tw, "every checksum matches")
	return tw.Flush()
}

// runRestore is `parley restore --from FILE --data-dir DIR`.
func runRestore(_ context.Context, e *Env, path string, args []string) error {
	var from, dir string
	fs := newFlagSet(path, "--from FILE --data-dir DIR", `
Seed the empty data directory DIR of the first node of a NEW cluster from a
backup file. The whole file is checked first (every checksum): a corrupt
file is refused and nothing is written. Every partition then starts from
its backed-up state; the metadata group does not (the new cluster has a new
id, CA, join token and cluster map). Then start the node on DIR with
'parley serve' and the backup's number of partitions, and join the other
nodes to it as usual: they get their replicas from it.`)
	fs.StringVar(&from, "from", "", "the backup `file` (required)")
	fs.StringVar(&dir, "data-dir", "", "the empty data `directory` to seed (required)")
	pos, err := fs.parse(args, e.getenv)
	if err != nil {
		return err
	}
	switch {
	case len(pos) != 0:
		return usagef(path, "unexpected argument %q", pos[0])
	case from == "" || dir == "":
		return usagef(path, "--from FILE and --data-dir DIR are required")
	}
	sum, err := node.Restore(dir, func() (io.ReadCloser, error) { return os.Open(from) })
	if err != nil {
		return fmt.Errorf("restore from %s: %w", from, err)
	}
	h := sum.Header
	fmt.Fprintf(e.Stdout, "restored %s of cluster %s into %s\n", plural(h.Partitions, "partition"), h.ClusterID, dir)
	fmt.Fprintf(e.Stdout, "start the new cluster's first node with: parley serve --data-dir %s --partitions %d --replication-factor %d --id ID ...\n", dir, h.Partitions, h.ReplicationFactor)
	return nil
}

// isTerminal reports whether w is a terminal (Env.terminal decides in
// tests).
func (e *Env) isTerminal(w io.Writer) bool {
	if e.terminal != nil {
		return e.terminal(w)
	}
	return isTerminalWriter(w)
}

// byteSize renders a byte count for people.
func byteSize(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
