package cli

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// testPKI is a throw-away CA and one certificate it signed for 127.0.0.1,
// written as PEM files.
type testPKI struct {
	caFile, certFile, keyFile string
	pool                      *x509.CertPool
}

// mustPKI writes a CA and a server/client certificate into dir.
func mustPKI(t *testing.T, dir string) testPKI {
	t.Helper()
	caKey := mustKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "parley test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key := mustKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "node"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p := testPKI{caFile: filepath.Join(dir, "ca.pem"), certFile: filepath.Join(dir, "node.pem"), keyFile: filepath.Join(dir, "node.key"), pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	mustPEM(t, p.caFile, "CERTIFICATE", caDER)
	mustPEM(t, p.certFile, "CERTIFICATE", der)
	mustPEM(t, p.keyFile, "EC PRIVATE KEY", keyDER)
	return p
}

// mustKey returns a new P-256 key.
func mustKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// mustPEM writes der as a PEM block of type typ to file.
func mustPEM(t *testing.T, file, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestMutualTLS(t *testing.T) {
	p := mustPKI(t, t.TempDir())
	t.Run("builds a mutual TLS configuration", func(t *testing.T) {
		tc, err := mutualTLS(p.certFile, p.keyFile, p.caFile)
		if err != nil {
			t.Fatal(err)
		}
		if tc.ClientAuth != tls.RequireAndVerifyClientCert || tc.ClientCAs == nil || tc.RootCAs == nil || len(tc.Certificates) != 1 {
			t.Errorf("config = %+v", tc)
		}
	})
	t.Run("a CA file without certificates is refused", func(t *testing.T) {
		if _, err := mutualTLS(p.certFile, p.keyFile, p.keyFile); err == nil || !strings.Contains(err.Error(), "--cluster-tls-ca") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestServe_TLS(t *testing.T) {
	p := mustPKI(t, t.TempDir())
	linksAddr := testcluster.FreeAddr(t)
	url, stop := startServe(t, "--links", linksAddr,
		"--tls-cert", p.certFile, "--tls-key", p.keyFile,
		"--cluster-tls-cert", p.certFile, "--cluster-tls-key", p.keyFile, "--cluster-tls-ca", p.caFile)
	if !strings.HasPrefix(url, "https://127.0.0.1:") {
		t.Fatalf("serving %s, want an https URL", url)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.pool}}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Ready once its replicas have elected their leaders, moments after
	// the serving line.
	poll.Until(t, 10*time.Second, "readyz over HTTPS answers 200", func() error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/readyz", nil)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz over HTTPS = %d", resp.StatusCode)
		}
		return nil
	})
	t.Run("the links listener serves short links over HTTPS only", func(t *testing.T) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+linksAddr+"/s/nope", nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Security-Policy") == "" || resp.TLS == nil {
			t.Errorf("GET /s/nope over HTTPS: %d, CSP %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
		}
		req, _ = http.NewRequestWithContext(ctx, http.MethodGet, "http://"+linksAddr+"/s/nope", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest { // Go's TLS answers a plain request with a 400
				t.Errorf("GET /s/nope over plain HTTP: %d, want no answer or 400", resp.StatusCode)
			}
		}
	})
	t.Run("client commands trust --ca-file", func(t *testing.T) {
		r := run(ctx, nil, "", "health", "--server", url)
		if r.code != 1 || !strings.Contains(r.stderr, "certificate") {
			t.Errorf("health without --ca-file: exit %d, stderr %q", r.code, r.stderr)
		}
		if r := run(ctx, nil, "", "health", "--server", url, "--ca-file", p.caFile); r.code != 0 || r.stdout != "ready\n" {
			t.Errorf("health --ca-file: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		if r := run(ctx, map[string]string{"PARLEY_CA_FILE": p.caFile}, "", "health", "--server", url, "--live"); r.code != 0 || r.stdout != "alive\n" {
			t.Errorf("health --live with $PARLEY_CA_FILE: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
		if r := run(ctx, nil, "", "health", "--server", url, "--ca-file", p.keyFile); r.code != 2 || !strings.Contains(r.stderr, "--ca-file: no PEM certificate") {
			t.Errorf("health with a key as --ca-file: exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("health finds the local node from $PARLEY_HTTP and $PARLEY_TLS_CERT", func(t *testing.T) {
		env := map[string]string{"PARLEY_HTTP": "0.0.0.0:" + url[strings.LastIndex(url, ":")+1:], "PARLEY_TLS_CERT": p.certFile}
		if r := run(ctx, env, "", "health"); r.code != 0 || r.stdout != "ready\n" {
			t.Errorf("health: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	})
	if code := stop(); code != 0 {
		t.Errorf("exit code %d", code)
	}
}
