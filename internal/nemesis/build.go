package nemesis

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

var (
	buildMu  sync.Mutex
	buildDir string
	buildBin string
)

// Binary builds the parley binary once per test process (go build, with
// the failpoints tag: the clock faults of clock.go need it; the failpoints
// do nothing unless their environment variables are set) and returns its
// path; RemoveBinary deletes it.
func Binary() (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildBin != "" {
		return buildBin, nil
	}
	dir, err := os.MkdirTemp("", "parley-nemesis-bin")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "parley")
	out, err := exec.Command("go", "build", "-tags", "failpoints", "-o", bin, "github.com/parley-chat/parley/cmd/parley").CombinedOutput()
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	buildDir, buildBin = dir, bin
	return bin, nil
}

// RemoveBinary removes what Binary built; TestMain calls it when the tests
// end.
func RemoveBinary() {
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
		buildDir, buildBin = "", ""
	}
}
