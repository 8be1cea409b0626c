package testcluster_test

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/parley-chat/parley/client"
)

// testPicture writes a 480×300 PNG (a sunset over hills) to dir.
func testPicture(t *testing.T, dir string) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 480, 300))
	for y := range 300 {
		for x := range 480 {
			f := float64(y) / 300
			c := color.RGBA{uint8(40 + 200*f), uint8(90 + 80*f), uint8(200 - 120*f), 255}
			if dx, dy := float64(x-330), float64(y-170); dx*dx+dy*dy < 55*55 {
				c = color.RGBA{250, 200, 90, 255}
			}
			if float64(y) > 220+30*math.Sin(float64(x)/60) {
				c = color.RGBA{40, uint8(110 + y/6), 70, 255}
			}
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "sunset.png")
	if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestWeb_Files drives file sharing in headless Chromium on a desktop's
// and a phone's screen: alice attaches an image with the attach button's
// file input and drops a text file on the room; both upload with a
// progress bar into the composer's tray and are posted with her message;
// bob sees the image inline (decoded from the file route, through the
// page's Content-Security-Policy) and the text file as a download chip.
func TestWeb_Files(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	b := newBrowser(t)
	c := newAPICluster(t, 1, 1)
	base := "http://" + c.Node(0).HTTPAddr()
	picture := testPicture(t, t.TempDir())
	for _, s := range screens {
		t.Run(s.name, func(t *testing.T) {
			ctx := apiCtx(t)
			room := "photos-" + s.name
			alice := signUp(t, c, 0, 0, "alice-"+s.name)
			bob := signUp(t, c, 0, 0, "bob-"+s.name)
			if _, err := alice.CreateRoom(ctx, client.RoomSpec{Name: room}); err != nil {
				t.Fatal(err)
			}
			if _, err := bob.JoinRoom(ctx, room, ""); err != nil {
				t.Fatal(err)
			}
			if _, err := bob.Post(ctx, room, "Anyone have pictures from the trip?", client.PostOptions{}); err != nil {
				t.Fatal(err)
			}
			p := polish{b: b, c: c, base: base, s: s}
			ta := p.open(t, "alice-"+s.name, alice, "#/room/"+room)
			ta.waitFor("the room", hasText(".events .msg .text", "Anyone have pictures from the trip?"))
			ta.do("attach the picture", chromedp.SetUploadFiles(chromedp.CSS(".composer input[type=file]"), []string{picture}))
			ta.do("drop a text file on the room", chromedp.Evaluate[chromedp.Void](`(() => {
				const dt = new DataTransfer();
				dt.items.add(new File(['day 1: hills\nday 2: sea\n'], 'itinerary.txt', {type: 'text/plain'}));
				const room = document.querySelector('.room');
				room.dispatchEvent(new DragEvent('dragover', {dataTransfer: dt, bubbles: true, cancelable: true}));
				room.dispatchEvent(new DragEvent('drop', {dataTransfer: dt, bubbles: true, cancelable: true}));
			})()`))
			ta.waitFor("both uploaded", `document.querySelectorAll('.file-tray .file-chip').length === 2 &&
				!document.querySelector('.file-tray .uploading, .file-tray .failed')`)
			ta.do("write the message", chromedp.SendKeys(chromedp.CSS("textarea[name=text]"), "Here you go: the sunset and the plan"))
			ta.screenshot("files-composer-" + s.name)
			ta.do("send", chromedp.SendKeys(chromedp.CSS("textarea[name=text]"), "\n"))
			ta.waitFor("the tray emptied", `document.querySelector('.file-tray').hidden`)

			tb := p.open(t, "bob-"+s.name, bob, "#/room/"+room)
			shown := `.events .msg .files`
			tb.waitFor("the inline image", `(() => { const i = document.querySelector('`+shown+` .file-image img');
				return i && i.complete && i.naturalWidth === 480 && i.src.startsWith('blob:') && i.alt === 'sunset.png'; })()`)
			tb.waitFor("the download chip", hasText(shown+" button.file-chip .file-name", "itinerary.txt")+
				` && document.querySelector('`+shown+` button.file-chip .file-size').textContent === '24 B'`)
			tb.waitFor("the text beside them", hasText(".events .msg .text", "Here you go: the sunset and the plan"))
			tb.do("scroll to the end", chromedp.Evaluate[chromedp.Void](`document.querySelector('.scroller').scrollTop = 1e9`))
			tb.screenshot("files-" + s.name)
			ta.checkConsole()
			tb.checkConsole()
			if s.phone {
				tb.waitFor("nothing scrolls sideways", `document.documentElement.scrollWidth <= innerWidth`)
			}
		})
	}
}
