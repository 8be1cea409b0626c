package nemesis

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

var (
	buildMu   sync.Mutex
	buildDir  string
	buildBins = map[string]string{} // package -> binary
)

// Binary builds the parley binary once per test process (go build, with
// the failpoints tag: the clock faults of clock.go need it; the failpoints
// do nothing unless their environment variables are set) and returns its
// path; RemoveBinary deletes it.
func Binary() (string, error) {
	return build("github.com/parley-chat/parley/cmd/parley", "-tags", "failpoints")
}

// FaultFSBinary builds the fault-injecting file system's program
// (faultfs/cmd/parley-faultfs) once per test process and returns its path.
func FaultFSBinary() (string, error) {
	return build("github.com/parley-chat/parley/internal/nemesis/faultfs/cmd/parley-faultfs")
}

// build builds the command pkg (with extra go build flags) once per test
// process into the binaries' directory and returns its path.
func build(pkg string, flags ...string) (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	if bin, ok := buildBins[pkg]; ok {
		return bin, nil
	}
	if buildDir == "" {
		dir, err := os.MkdirTemp("", "parley-nemesis-bin")
		if err != nil {
			return "", err
		}
		buildDir = dir
	}
	bin := filepath.Join(buildDir, filepath.Base(pkg))
	args := append(append([]string{"build"}, flags...), "-o", bin, pkg)
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	buildBins[pkg] = bin
	return bin, nil
}

// RemoveBinary removes what Binary built; TestMain calls it when the tests
// end.
func RemoveBinary() {
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
		buildDir, buildBins = "", map[string]string{}
	}
}
