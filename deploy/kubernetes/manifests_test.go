// Package kubernetes tests the manifests of deploy/kubernetes: each decodes
// strictly into its k8s.io/api type (an unknown or misspelt field fails),
// every parley flag they set exists, and the pieces fit together (the
// StatefulSet's headless Service, probes, volumes, disruption budget). The
// Kubernetes modules are imported by this test only, never by the parley
// binary.
package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/parley-chat/parley/internal/cli"
)

// manifests holds every object of the directory's YAML files, by kind.
type manifests struct {
	services    []corev1.Service
	statefulSet []appsv1.StatefulSet
	pdbs        []policyv1.PodDisruptionBudget
}

// loadManifests decodes every document of every *.yaml file strictly.
func loadManifests(t *testing.T) manifests {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	var m manifests
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
			if strings.TrimSpace(regexp.MustCompile(`(?m)^#.*$`).ReplaceAllString(doc, "")) == "" {
				continue
			}
			var head struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				t.Fatalf("%s document %d: %v", f, i+1, err)
			}
			var obj any
			switch head.APIVersion + " " + head.Kind {
			case "v1 Service":
				m.services = append(m.services, corev1.Service{})
				obj = &m.services[len(m.services)-1]
			case "apps/v1 StatefulSet":
				m.statefulSet = append(m.statefulSet, appsv1.StatefulSet{})
				obj = &m.statefulSet[len(m.statefulSet)-1]
			case "policy/v1 PodDisruptionBudget":
				m.pdbs = append(m.pdbs, policyv1.PodDisruptionBudget{})
				obj = &m.pdbs[len(m.pdbs)-1]
			default:
				t.Fatalf("%s document %d: no test knows %s %s", f, i+1, head.APIVersion, head.Kind)
			}
			if err := decodeStrict([]byte(doc), obj); err != nil {
				t.Fatalf("%s document %d (%s): %v", f, i+1, head.Kind, err)
			}
		}
	}
	return m
}

func TestManifests_StrictDecoding(t *testing.T) {
	m := loadManifests(t)
	if len(m.services) != 2 || len(m.statefulSet) != 1 || len(m.pdbs) != 1 {
		t.Fatalf("found %d services, %d stateful sets, %d disruption budgets; want 2, 1, 1", len(m.services), len(m.statefulSet), len(m.pdbs))
	}
	t.Run("a misspelt field fails", func(t *testing.T) {
		var svc corev1.Service
		err := decodeStrict([]byte("apiVersion: v1\nkind: Service\nspec:\n  clusterIp: None\n"), &svc)
		if err == nil || !strings.Contains(err.Error(), "clusterIp") {
			t.Errorf("err = %v, want one naming clusterIp", err)
		}
	})
}

// decodeStrict decodes a YAML document into obj as the API server's strict
// field validation does: a duplicate key, an unknown field or a field in
// the wrong case is an error.
func decodeStrict(doc []byte, obj any) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(j, obj)
	return errors.Join(append([]error{err}, strict...)...)
}

// serveFlags returns the flags of `parley serve`, from its help.
func serveFlags(t *testing.T) map[string]bool {
	t.Helper()
	var out bytes.Buffer
	code := cli.Run(context.Background(), &cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: io.Discard}, []string{"serve", "-h"})
	if code != 0 {
		t.Fatalf("parley serve -h: exit %d", code)
	}
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  --([a-z][a-z0-9-]*)`).FindAllStringSubmatch(out.String(), -1) {
		flags[m[1]] = true
	}
	return flags
}

// podEnv returns the container's environment as the kubelet would give it
// to pod name: $(VAR) references to earlier variables expanded, fieldRefs
// to the pod's name and namespace filled.
func podEnv(t *testing.T, c corev1.Container, name, namespace string) map[string]string {
	t.Helper()
	env := map[string]string{}
	ref := regexp.MustCompile(`\$\(([A-Z_][A-Z0-9_]*)\)`)
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			env[e.Name] = name
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env[e.Name] = namespace
		case e.ValueFrom != nil:
			t.Fatalf("variable %s: no test knows its source", e.Name)
		default:
			env[e.Name] = ref.ReplaceAllStringFunc(e.Value, func(s string) string {
				v, ok := env[s[2:len(s)-1]]
				if !ok {
					t.Errorf("variable %s refers to %s, not defined before it", e.Name, s)
				}
				return v
			})
		}
	}
	return env
}

func TestManifests_StatefulSet(t *testing.T) {
	m := loadManifests(t)
	sts := m.statefulSet[0]
	pod := sts.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	flags := serveFlags(t)

	t.Run("every flag set exists in parley serve", func(t *testing.T) {
		if len(c.Args) == 0 || c.Args[0] != "serve" {
			t.Fatalf("args %q, want serve first", c.Args)
		}
		for _, a := range c.Args[1:] {
			if name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "="); strings.HasPrefix(a, "--") && !flags[name] {
				t.Errorf("argument %s: parley serve has no such flag", a)
			}
		}
		for _, e := range c.Env {
			name, ok := strings.CutPrefix(e.Name, "PARLEY_")
			if ok && !flags[strings.ReplaceAll(strings.ToLower(name), "_", "-")] {
				t.Errorf("variable %s: parley serve has no flag --%s", e.Name, strings.ReplaceAll(strings.ToLower(name), "_", "-"))
			}
		}
	})

	t.Run("each pod's settings are valid, its id its name", func(t *testing.T) {
		for i := range int(*sts.Spec.Replicas) {
			name := sts.Name + "-" + strconv.Itoa(i)
			env := podEnv(t, c, name, "prod")
			o, err := cli.ParseServe("parley serve", c.Args[1:], func(k string) string { return env[k] })
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			cfg := o.Config
			if cfg.ID != name {
				t.Errorf("%s: id %q", name, cfg.ID)
			}
			if wantAdv := name + "." + sts.Spec.ServiceName + ".prod.svc.cluster.local:7071"; cfg.Advertise != wantAdv {
				t.Errorf("%s advertises %q, want %q", name, cfg.Advertise, wantAdv)
			}
			if creates := cfg.MayCreate(); creates != (i == 0) {
				t.Errorf("%s creates a cluster: %v; only %s-0 may", name, creates, sts.Name)
			}
			for _, j := range cfg.Join {
				if !strings.HasSuffix(j, "."+sts.Spec.ServiceName+".prod.svc.cluster.local:7071") {
					t.Errorf("%s joins through %q, not a pod of the headless service", name, j)
				}
			}
		}
	})

	t.Run("the headless service gives peers their names", func(t *testing.T) {
		var peers *corev1.Service
		for i := range m.services {
			if m.services[i].Name == sts.Spec.ServiceName {
				peers = &m.services[i]
			}
		}
		if peers == nil || peers.Spec.ClusterIP != corev1.ClusterIPNone || !peers.Spec.PublishNotReadyAddresses {
			t.Fatalf("service %q: want headless, publishing pods before they are ready: %+v", sts.Spec.ServiceName, peers)
		}
		if !selects(peers.Spec.Selector, sts.Spec.Template.Labels) {
			t.Errorf("service %s selects %v, pods are %v", peers.Name, peers.Spec.Selector, sts.Spec.Template.Labels)
		}
		ports := map[string]bool{}
		for _, p := range peers.Spec.Ports {
			ports[string(p.Protocol)+"/"+p.TargetPort.String()+"/"+strconv.Itoa(int(p.Port))] = true
		}
		for _, want := range []string{"TCP/0/7070", "TCP/0/7071", "TCP/0/7072", "UDP/0/7072"} {
			if !ports[want] {
				t.Errorf("service %s lacks port %s: %v", peers.Name, want, ports)
			}
		}
	})

	t.Run("probes, volume and shutdown", func(t *testing.T) {
		if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" {
			t.Errorf("readiness probe %+v, want GET /readyz", p)
		}
		if len(sts.Spec.VolumeClaimTemplates) != 1 {
			t.Fatalf("want one volume claim template, got %d", len(sts.Spec.VolumeClaimTemplates))
		}
		claim := sts.Spec.VolumeClaimTemplates[0].Name
		mounted := false
		for _, vm := range c.VolumeMounts {
			mounted = mounted || vm.Name == claim && vm.MountPath == "/data"
		}
		if !mounted {
			t.Errorf("claim %s is not mounted at /data, the image's data directory", claim)
		}
		// Serve hands leadership over for at most 10 s after SIGTERM.
		if g := pod.TerminationGracePeriodSeconds; g == nil || *g < 15 {
			t.Errorf("termination grace period %v, want 15 s or more", g)
		}
		if sc := pod.SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 65532 || sc.FSGroup == nil {
			t.Errorf("pod security context %+v, want uid 65532 and an fsGroup", sc)
		}
	})

	t.Run("the disruption budget covers the pods", func(t *testing.T) {
		pdb := m.pdbs[0]
		if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 || !selects(pdb.Spec.Selector.MatchLabels, sts.Spec.Template.Labels) {
			t.Errorf("budget %+v, want at most one pod of %v unavailable", pdb.Spec, sts.Spec.Template.Labels)
		}
	})
}

// selects reports whether selector matches labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}
