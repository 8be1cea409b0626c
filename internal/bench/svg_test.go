package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestWriteSVG_Title(t *testing.T) {
	for _, tc := range []struct {
		workers int
		want    string
	}{
		{1, ": 1 client, "},
		{2, ": 2 clients, "},
	} {
		rep, err := Run(context.Background(), &fakeWorkload{}, Options{Workers: tc.workers, Requests: 10})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := WriteSVG(&b, rep); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), tc.want) {
			t.Errorf("%d workers: the title lacks %q:\n%.400s", tc.workers, tc.want, b.String())
		}
	}
}
