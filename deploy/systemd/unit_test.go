// Package systemd tests deploy/systemd/parley.service: the flags it passes
// exist, its sandboxing is on, and systemd-analyze verify accepts it where
// systemd-analyze is installed.
package systemd

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/cli"
)

// unit reads the unit file.
func unit(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("parley.service")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestUnit_ExecStartFlagsExist(t *testing.T) {
	m := regexp.MustCompile(`(?m)^ExecStart=(\S+) serve (.*)$`).FindStringSubmatch(unit(t))
	if m == nil {
		t.Fatal("no ExecStart=... serve line")
	}
	var help bytes.Buffer
	cli.Run(context.Background(), &cli.Env{Stdin: strings.NewReader(""), Stdout: &help, Stderr: io.Discard}, []string{"serve", "-h"})
	for _, arg := range strings.Fields(m[2]) {
		if strings.HasPrefix(arg, "--") && !strings.Contains(help.String(), "\n  "+arg+" ") {
			t.Errorf("ExecStart passes %s, which parley serve does not have", arg)
		}
	}
}

func TestUnit_Sandboxed(t *testing.T) {
	u := unit(t)
	for _, want := range []string{"ProtectSystem=strict", "NoNewPrivileges=yes", "PrivateTmp=yes", "ProtectHome=yes",
		"PrivateDevices=yes", "DynamicUser=yes", "StateDirectory=parley", "CapabilityBoundingSet=\n", "KillSignal=SIGTERM"} {
		if !strings.Contains(u, want) {
			t.Errorf("the unit lacks %q", strings.TrimSpace(want))
		}
	}
}

// TestUnit_Verify runs systemd-analyze verify on the unit, its binary path
// pointed at an executable that exists here.
func TestUnit_Verify(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("no systemd-analyze")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(t.TempDir(), "parley.service")
	u := strings.ReplaceAll(unit(t), "ExecStart=/usr/local/bin/parley ", "ExecStart="+exe+" ")
	if err := os.WriteFile(copyPath, []byte(u), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("systemd-analyze", "verify", copyPath).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
