package node

import (
	"fmt"

	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/state"
)

// domainMux dispatches a partition's commands to the domain state machine
// named by the command's first byte.
type domainMux map[byte]state.Applier

// partitionMux is the state machine of every partition.
var partitionMux = domainMux{
	kv.Tag: kv.StateMachine{},
}

// Apply implements state.Applier.
func (d domainMux) Apply(w state.Writer, meta state.Meta, cmd []byte) ([]byte, error) {
	if len(cmd) == 0 {
		return nil, nil
	}
	sm, ok := d[cmd[0]]
	if !ok {
		// Every replica refuses an unknown domain alike; the result says so.
		return []byte(fmt.Sprintf("unknown command domain %q", cmd[0])), nil
	}
	return sm.Apply(w, meta, cmd)
}
