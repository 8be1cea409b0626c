package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

// peerClients are the client libraries of the systems Parley is
// benchmarked against, and the package running them. Only
// cmd/parley-bench links them; the server binary must not.
var peerClients = []string{
	"github.com/nats-io",
	"github.com/rabbitmq/amqp091-go",
	module + "internal/bench/peers",
}

// etcdClient is etcd's Go client: the etcd workload speaks etcd's JSON
// gateway over net/http instead, and neither binary may link it.
const etcdClient = "go.etcd.io/etcd/client"

// testOnly are modules that only tests import (the Kubernetes manifest
// test of deploy/kubernetes; kin-openapi and its JSON Schema validator,
// which check API answers against the OpenAPI document): neither binary
// may link them.
var testOnly = []string{"k8s.io/", "sigs.k8s.io/", "github.com/getkin/", "github.com/santhosh-tekuri/"}

// TestBinary_NoTestOnlyModules fails when a binary links a test-only module.
func TestBinary_NoTestOnlyModules(t *testing.T) {
	for _, bin := range []string{"./cmd/parley", "./cmd/parley-bench"} {
		for _, pkg := range deps(t, bin) {
			for _, bad := range testOnly {
				if strings.HasPrefix(pkg, bad) {
					t.Errorf("%s links %s, a module for tests only", bin, pkg)
				}
			}
		}
	}
}

// under reports whether the package pkg is path or lies beneath it.
func under(pkg, path string) bool {
	return pkg == path || strings.HasPrefix(pkg, path+"/")
}

// TestBinary_ServerCarriesNoPeerClients lists every package linked into
// cmd/parley, with go list -deps, and fails on any peer client.
func TestBinary_ServerCarriesNoPeerClients(t *testing.T) {
	for _, pkg := range deps(t, "./cmd/parley") {
		for _, bad := range append(peerClients, etcdClient) {
			if under(pkg, bad) {
				t.Errorf("cmd/parley links %s: peer benchmark clients belong to cmd/parley-bench", pkg)
			}
		}
	}
	// The check is only as good as the names: parley-bench must link each.
	found := map[string]bool{}
	for _, pkg := range deps(t, "./cmd/parley-bench") {
		for _, c := range peerClients {
			found[c] = found[c] || under(pkg, c)
		}
		if under(pkg, etcdClient) {
			t.Errorf("cmd/parley-bench links %s; the etcd workload needs only net/http", pkg)
		}
	}
	for _, c := range peerClients {
		if !found[c] {
			t.Errorf("cmd/parley-bench does not link %s: is the name still right?", c)
		}
	}
}

// deps returns the import paths of every package pkg (relative to the
// repository root) links, as go list -deps prints them.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go") // go test puts its own go first on PATH
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	cmd := exec.Command(goTool, "list", "-deps", pkg)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v %s", pkg, err, msg)
	}
	return strings.Fields(string(out))
}
