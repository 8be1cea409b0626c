package nemesis

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// netFaults keeps the delayers running for a Net.
type netFaults struct {
	mu       sync.Mutex
	delayers map[int]*delayer
}

// Loss drops each packet host i sends with probability p (0 to 1), with
// iptables' statistic match.
func (nw *Net) Loss(i int, p float64) error {
	_, err := inNS(nw.host(i).NS, "iptables", "-w", "-A", netOut, "-o", "eth0",
		"-m", "statistic", "--mode", "random", "--probability", fmt.Sprintf("%.4f", p), "-j", "DROP")
	return err
}

// Delay holds every packet host i sends for delay ± jitter, and a share
// reorder (0 to 1) of them one more delay, so later packets overtake them.
// It uses tc netem when the kernel has it, else an NFQUEUE delayer run by
// this process; it returns which ("netem" or "nfqueue").
func (nw *Net) Delay(i int, delay, jitter time.Duration, reorder float64) (string, error) {
	h := nw.host(i)
	args := []string{"tc", "qdisc", "replace", "dev", "eth0", "root", "netem",
		"delay", delay.String(), jitter.String()}
	if reorder > 0 {
		// netem sends a share of packets at once, the rest delayed: reordered.
		args = append(args, "reorder", fmt.Sprintf("%.0f%%", 100*(1-reorder)))
	}
	if _, err := inNS(h.NS, args...); err == nil {
		return "netem", nil
	} else if !strings.Contains(err.Error(), "unknown") {
		return "", err
	}
	d, err := startDelayer(h.NS, uint16(i), delay, jitter, reorder)
	if err != nil {
		return "", err
	}
	nw.faults.mu.Lock()
	if nw.faults.delayers == nil {
		nw.faults.delayers = map[int]*delayer{}
	}
	if old := nw.faults.delayers[i]; old != nil {
		defer old.close()
	}
	nw.faults.delayers[i] = d
	nw.faults.mu.Unlock()
	_, err = inNS(h.NS, "iptables", "-w", "-A", netOut, "-o", "eth0", "-j", "NFQUEUE",
		"--queue-num", fmt.Sprint(i), "--queue-bypass")
	return "nfqueue", err
}

// ClearNetFaults removes every loss and delay of every host.
func (nw *Net) ClearNetFaults() error {
	var errs []error
	for _, h := range nw.Hosts {
		_, err := inNS(h.NS, "iptables", "-w", "-F", netOut)
		errs = append(errs, err)
		_, _ = inNS(h.NS, "tc", "qdisc", "del", "dev", "eth0", "root") // absent unless netem ran
	}
	nw.faults.mu.Lock()
	ds := nw.faults.delayers
	nw.faults.delayers = nil
	nw.faults.mu.Unlock()
	for _, d := range ds {
		d.close()
	}
	return errors.Join(errs...)
}
