package membership

import (
	"strings"
	"testing"
)

// TestMeta_LinksAddr: a member's links listener travels in its metadata,
// is left out when it has none, and metadata from a build that does not
// send it still decodes.
func TestMeta_LinksAddr(t *testing.T) {
	b, err := encodeMeta(wireMeta{Cluster: "c1", Meta: Meta{ID: "n1", HTTPAddr: "10.0.0.3:7070", LinksAddr: "10.0.0.3:8080"}})
	if err != nil {
		t.Fatal(err)
	}
	if w, err := decodeMeta(b); err != nil || w.LinksAddr != "10.0.0.3:8080" {
		t.Fatalf("decodeMeta(%s) = %+v, %v", b, w, err)
	}
	b, err = encodeMeta(wireMeta{Cluster: "c1", Meta: Meta{ID: "n1"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "links_addr") {
		t.Errorf("metadata without a links listener = %s, want no links_addr", b)
	}
	old := `{"cluster":"c1","id":"n2","cluster_addr":"10.0.0.4:7000","http_addr":"10.0.0.4:7070","zone":"a"}`
	w, err := decodeMeta([]byte(old))
	if err != nil || w.ID != "n2" || w.HTTPAddr != "10.0.0.4:7070" || w.LinksAddr != "" {
		t.Fatalf("decodeMeta(%s) = %+v, %v", old, w, err)
	}
}
