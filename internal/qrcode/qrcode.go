// Package qrcode renders QR codes, as PNG or SVG, for the short links'
// QR route. It is the one home of the QR dependency,
// github.com/piglig/go-qr (docs/DEPENDENCIES.md says why): encoding is
// never done by hand here.
package qrcode

import (
	"fmt"

	goqr "github.com/piglig/go-qr"
)

// Format is an image format.
type Format string

// Formats.
const (
	PNG Format = "png"
	SVG Format = "svg"
)

// ContentType returns the media type of f.
func (f Format) ContentType() string {
	if f == SVG {
		return "image/svg+xml"
	}
	return "image/png"
}

// Limits of Render's scale: pixels per module.
const (
	MinScale     = 1
	MaxScale     = 32
	DefaultScale = 8
)

// border is the quiet zone around the code, in modules (the standard's 4).
const border = 4

// Render encodes text at error correction level M (15% of the code may be
// damaged) and draws it in format f with scale pixels per module.
func Render(text string, f Format, scale int) ([]byte, error) {
	if scale < MinScale || scale > MaxScale {
		return nil, fmt.Errorf("qrcode: scale %d is not %d to %d", scale, MinScale, MaxScale)
	}
	qr, err := goqr.EncodeText(text, goqr.Medium)
	if err != nil {
		return nil, fmt.Errorf("qrcode: encode: %w", err)
	}
	cfg := goqr.NewQrCodeImgConfig(scale, border)
	switch f {
	case PNG:
		return qr.ToPNGBytes(cfg)
	case SVG:
		return qr.ToSVGBytes(cfg)
	}
	return nil, fmt.Errorf("qrcode: format %q is not png or svg", f)
}
