package cli

import (
	"fmt"
	"time"

	"github.com/parley-chat/parley/internal/config"
)

// editWindowValue is the --edit-window flag: a duration, or "none" for no
// limit (config.NoEditLimit).
type editWindowValue struct{ p *time.Duration }

func newEditWindowValue(p *time.Duration, def time.Duration) *editWindowValue {
	*p = def
	return &editWindowValue{p: p}
}

// String implements flag.Value.
func (v *editWindowValue) String() string {
	if v == nil || v.p == nil || *v.p < 0 {
		return "none"
	}
	return v.p.String()
}

// Set implements flag.Value.
func (v *editWindowValue) Set(s string) error {
	if s == "none" {
		*v.p = config.NoEditLimit
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("want a duration such as 15m, 0 (editing off) or none (no limit)")
	}
	*v.p = d
	return nil
}
