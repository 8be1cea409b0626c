package node

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/parley-chat/parley/internal/metrics"
	"github.com/parley-chat/parley/internal/multiraft"
)

// phaseRecorder hands the engine's proposal timings (Config.OnProposal) to
// the phase histogram once the metrics exist (they are made after the
// engine).
type phaseRecorder struct {
	hist atomic.Pointer[metrics.ProposalPhases]
}

// record implements multiraft.Config.OnProposal.
func (r *phaseRecorder) record(t multiraft.ProposalTimes) {
	if h := r.hist.Load(); h != nil {
		h.Observe(metrics.PhaseTimes(t))
	}
}

// startPprof serves Go's profiles (CPU, heap, goroutines, mutex, block,
// trace) under /debug/pprof/ on cfg.PprofAddr, when set: a listener of its
// own, without authentication, so it binds to loopback unless the address
// names another host. It turns on the process's mutex and block profiling
// (sampled: 1 in 10 contended mutexes, blocking events every 100 us on
// average). It stops when the node closes.
func (n *Node) startPprof() error {
	if n.cfg.PprofAddr == "" {
		return nil
	}
	addr := n.cfg.PprofAddr
	if host, port, err := net.SplitHostPort(addr); err == nil && host == "" {
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen for pprof on %s: %w", addr, err)
	}
	runtime.SetMutexProfileFraction(10)
	runtime.SetBlockProfileRate(100_000)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	n.goBackground(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("pprof server stopped", "err", err)
		}
	})
	n.goBackground(func() {
		<-n.ctx.Done()
		_ = srv.Close()
	})
	n.log.Info("serving Go profiles", "addr", ln.Addr().String())
	return nil
}

// storageStats reads the database's figures for /metrics.
func (n *Node) storageStats() metrics.StorageStats {
	s := n.db.PebbleStats()
	return metrics.StorageStats{
		WALBytesWritten: s.WALBytesWritten, WALFsyncs: s.WALFsyncs, WALFsyncSeconds: s.WALFsyncSeconds,
		Flushes: s.Flushes, Compactions: s.Compactions, TableBytesWritten: s.TableBytesWritten,
	}
}
