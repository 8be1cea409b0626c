package nemesis

import (
	"fmt"
	"os/exec"
	"strings"
)

// run runs a command and returns its trimmed output; a failure names the
// command and carries its output.
func run(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	s := strings.TrimSpace(string(out))
	if err != nil {
		return s, fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, s)
	}
	return s, nil
}

// inNS runs a command inside network namespace ns.
func inNS(ns string, args ...string) (string, error) {
	return run("ip", append([]string{"netns", "exec", ns}, args...)...)
}
