//go:build nemesis

package nemesis_test

import (
	"os"
	"testing"

	"github.com/parley-chat/parley/internal/nemesis"
)

// TestMain removes the binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	nemesis.RemoveBinary()
	os.Exit(code)
}
