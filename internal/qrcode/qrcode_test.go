package qrcode

import (
	"bytes"
	"image/png"
	"strings"
	"testing"

	goqr "github.com/piglig/go-qr"
)

// TestRender draws a short URL in both formats and reads the PNG back with
// the library's decoder: the image must say what was encoded.
func TestRender(t *testing.T) {
	const url = "https://par.ly/s/docs"
	b, err := Render(url, PNG, 4)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	got, err := goqr.Decode(img)
	if err != nil || got != url {
		t.Fatalf("decoded %q, %v; want %q", got, err, url)
	}
	svg, err := Render(url, SVG, 4)
	if err != nil || !strings.Contains(string(svg), "<svg") {
		t.Fatalf("svg = %.80q, %v", svg, err)
	}
	for _, tc := range []struct {
		f     Format
		scale int
	}{{"gif", 4}, {PNG, 0}, {SVG, MaxScale + 1}} {
		if _, err := Render(url, tc.f, tc.scale); err == nil {
			t.Errorf("Render(%q, %d) succeeded", tc.f, tc.scale)
		}
	}
}

func BenchmarkRender(b *testing.B) {
	for _, f := range []Format{PNG, SVG} {
		b.Run(string(f), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Render("https://par.ly/s/abcdefg", f, DefaultScale); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
