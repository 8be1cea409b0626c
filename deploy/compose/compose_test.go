//go:build docker

// Package compose tests deploy/compose: the three-node cluster of
// compose.yaml, in containers of the image deploy/build-image makes. It runs
// behind the docker build tag (go test -tags docker ./deploy/compose/) and
// needs Docker Engine and docker compose or docker-compose.
package compose

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/poll"
)

// project is one compose project the test made: its name, files and
// image, all removed by the test's cleanup.
type project struct {
	t     *testing.T
	cmd   []string // "docker compose" or "docker-compose"
	name  string
	files []string
	env   []string
	// proxy is set when the project runs the HAProxy of the "proxy"
	// profile (an image built from this machine's haproxy).
	proxy bool
}

// composeCommand finds docker compose (the plugin) or docker-compose.
func composeCommand(t *testing.T) []string {
	if exec.Command("docker", "info").Run() != nil {
		t.Skip("Docker Engine is not running")
	}
	if exec.Command("docker", "compose", "version").Run() == nil {
		return []string{"docker", "compose"}
	}
	if _, err := exec.LookPath("docker-compose"); err == nil {
		return []string{"docker-compose"}
	}
	t.Skip("neither docker compose nor docker-compose is installed")
	return nil
}

// run runs the compose command with args and returns its standard output.
func (p *project) run(args ...string) string {
	p.t.Helper()
	full := append(append(slices.Clone(p.cmd[1:]), "-p", p.name), flagFiles(p.files)...)
	if p.proxy {
		full = append(full, "--profile", "proxy")
	}
	cmd := exec.Command(p.cmd[0], append(full, args...)...)
	cmd.Env = append(os.Environ(), p.env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		p.t.Fatalf("%s %s: %v\n%s%s", strings.Join(p.cmd, " "), strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String()
}

func flagFiles(files []string) []string {
	var out []string
	for _, f := range files {
		out = append(out, "-f", f)
	}
	return out
}

// docker runs docker with args and returns its standard output.
func docker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return strings.TrimSpace(string(out))
}

// container returns the id of service's container.
func (p *project) container(service string) string {
	return strings.TrimSpace(p.run("ps", "-q", service))
}

// url returns the URL of service's HTTP port, published on loopback.
func (p *project) url(service string) string {
	port := "7070"
	if service == "haproxy" {
		port = "8080"
	}
	addr := strings.TrimSpace(p.run("port", service, port))
	return "http://" + strings.Replace(addr, "0.0.0.0:", "127.0.0.1:", 1)
}

// waitHealthy waits until service's container reports healthy (parley
// health, the image's HEALTHCHECK).
func (p *project) waitHealthy(service string) {
	p.t.Helper()
	id := p.container(service)
	poll.Until(p.t, 3*time.Minute, service+" healthy", func() error {
		if s := docker(p.t, "inspect", "--format", "{{.State.Health.Status}}", id); s != "healthy" {
			return fmt.Errorf("health %q", s)
		}
		return nil
	})
}

func randomName() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// startProject builds the image and brings compose.yaml up under a unique
// project name, each node's HTTP port published on a free loopback port,
// with the HAProxy of the proxy profile when this machine has haproxy to
// build its image from. Cleanup takes the project down with its volumes
// and removes the images.
func startProject(t *testing.T) *project {
	cmd := composeCommand(t)
	suffix := randomName()
	image := "parley-composetest:" + suffix
	build := exec.Command("../build-image", image)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("deploy/build-image: %v\n%s", err, out)
	} else {
		t.Logf("%s", bytes.TrimSpace(out))
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", image).Run() })

	p := &project{t: t, cmd: cmd, name: "parleytest" + suffix,
		env: []string{"PARLEY_IMAGE=" + image, "PARLEY_PORT=127.0.0.1:", "PARLEY_PROXY_PORT=127.0.0.1:"}}
	if _, err := exec.LookPath("haproxy"); err == nil {
		proxyImage := "parley-composetest-haproxy:" + suffix
		if out, err := exec.Command("haproxy/build-image", proxyImage).CombinedOutput(); err != nil {
			t.Fatalf("deploy/compose/haproxy/build-image: %v\n%s", err, out)
		}
		t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", proxyImage).Run() })
		p.proxy, p.env = true, append(p.env, "PARLEY_HAPROXY_IMAGE="+proxyImage)
	} else {
		t.Log("no haproxy on this machine: the proxy profile is left out")
	}

	override := filepath.Join(t.TempDir(), "publish.yaml")
	publish := "services:\n"
	for _, s := range []string{"parley2", "parley3"} {
		publish += "  " + s + ":\n    ports: [\"127.0.0.1::7070\"]\n"
	}
	if err := os.WriteFile(override, []byte(publish), 0o600); err != nil {
		t.Fatal(err)
	}
	p.files = []string{"compose.yaml", override}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", p.run("logs", "--no-color", "--tail", "60"))
		}
		p.run("down", "--volumes", "--timeout", "20")
	})
	p.run("up", "-d")
	for _, s := range []string{"parley1", "parley2", "parley3"} {
		p.waitHealthy(s)
	}
	if p.proxy {
		proxy := client.New(p.url("haproxy"))
		poll.Until(t, time.Minute, "HAProxy forwards to a ready node", func() error { return proxy.Readyz(context.Background()) })
	}
	return p
}

// TestCompose_KillAndRestart brings the cluster up, writes to every service
// through every node, kills a node's container (SIGKILL), keeps writing
// through the others, starts it again and checks that every acknowledged
// write is there, once, in order, read through every node.
func TestCompose_KillAndRestart(t *testing.T) {
	start := time.Now()
	p := startProject(t)
	t.Logf("cluster up and healthy in %s", time.Since(start).Round(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	services := []string{"parley1", "parley2", "parley3"}
	urls := map[string]string{}
	for _, s := range services {
		urls[s] = p.url(s)
	}
	admin := client.New(urls["parley1"])
	if _, err := admin.Register(ctx, "alice", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	sess, err := admin.Login(ctx, "alice", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	w := newWriter(sess.Token)
	w.setNodes(urls["parley1"], urls["parley2"], urls["parley3"])
	w.setup(ctx, t)
	w.writeRound(ctx, t, "before", 8)

	// While parley1 is down, writes go through the others, and through
	// HAProxy when it runs (it must stop sending to the dead node).
	alive := []string{urls["parley2"], urls["parley3"]}
	if p.proxy {
		urls["haproxy"] = p.url("haproxy")
		alive = []string{urls["haproxy"]}
	}
	victim := p.container("parley1")
	docker(t, "kill", victim)
	w.setNodes(alive...)
	w.writeRound(ctx, t, "while-down", 8)

	docker(t, "start", victim)
	p.waitHealthy("parley1")
	urls["parley1"] = p.url("parley1") // a new loopback port after the restart
	w.setNodes(urls["parley1"], urls["parley2"], urls["parley3"])
	w.waitReplicated(t, urls["parley2"])
	w.writeRound(ctx, t, "after", 4)
	w.waitReplicated(t, urls["parley3"])

	if p.proxy {
		services = append(services, "haproxy")
	}
	for _, s := range services {
		t.Run("nothing lost, read through "+s, func(t *testing.T) {
			w.check(ctx, t, client.New(urls[s], client.WithToken(sess.Token)))
		})
	}
	t.Run("queue delivers each message once", func(t *testing.T) {
		w.drainQueue(ctx, t, client.New(urls["parley1"], client.WithToken(sess.Token)))
	})
	t.Logf("whole test %s", time.Since(start).Round(time.Second))
}
