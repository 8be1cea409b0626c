package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/parley-chat/parley/internal/config"
)

// joinTokenPoll is how often a joining node looks for --join-token-file.
const joinTokenPoll = 500 * time.Millisecond

// readJoinTokenFile fills cfg.JoinToken from --join-token-file for a node
// that will join: with an empty data directory it waits until the file
// exists and holds a token (the first node may still be creating the
// cluster, the secret may not be mounted yet) or ctx ends. A node with data
// resumes without a token and does not wait. The initial node with
// --rebuild-quarantined reads a token that is there, since a quarantined
// data directory makes even it join, but never waits for one: on an empty
// directory it creates the cluster whose token the others wait for.
func (o *ServeOptions) readJoinTokenFile(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
	if o.JoinTokenFile == "" || cfg.MayCreate() && !cfg.RebuildQuarantined {
		return nil
	}
	fresh, err := emptyDir(cfg.DataDir)
	if err != nil {
		return err
	}
	mayWait := fresh && !cfg.MayCreate()
	for logged := false; ; logged = true {
		b, err := os.ReadFile(o.JoinTokenFile)
		if tok := strings.TrimSpace(string(b)); err == nil && tok != "" {
			cfg.JoinToken = tok
			return nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("--join-token-file: %w", err)
		}
		if !mayWait {
			return nil
		}
		if !logged {
			log.Info("waiting for the join token file", "file", o.JoinTokenFile)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no join token appeared in %s", o.JoinTokenFile)
		case <-time.After(joinTokenPoll):
		}
	}
}

// shareJoinToken writes token (the first join token of a cluster this node
// created, "" on other nodes) to --join-token-file, unless the file holds
// it already. It runs at every start, so a creator that stopped before
// sharing shares on its next start. The file is replaced atomically and
// readable by its owner only.
func (o *ServeOptions) shareJoinToken(token string) error {
	if o.JoinTokenFile == "" || token == "" {
		return nil
	}
	if b, err := os.ReadFile(o.JoinTokenFile); err == nil && strings.TrimSpace(string(b)) == token {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(o.JoinTokenFile), ".join-token-*")
	if err != nil {
		return fmt.Errorf("--join-token-file: %w", err)
	}
	_, err = tmp.WriteString(token + "\n")
	err = errors.Join(err, tmp.Chmod(0o600), tmp.Sync(), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), o.JoinTokenFile)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("--join-token-file: %w", err)
	}
	return nil
}

// emptyDir reports whether dir is missing or has no entries.
func emptyDir(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("data directory: %w", err)
	}
	return len(entries) == 0, nil
}
