package bench

import (
	"syscall"
	"time"
)

// ProcessCPU returns the user and system CPU time this process has used so
// far, every goroutine and thread included (0 if the system cannot say):
// benchmarks report it per operation, a figure that moves far less with a
// shared machine's load than throughput does.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
