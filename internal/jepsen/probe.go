package jepsen

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/nemesis"
)

// probeKeys is how many keys a readProbe writes.
const probeKeys = 50

// readProbe is a set of keys written through a healthy node before a
// node's reads are made to fail, then read through that node: every answer
// must be the right value, or a failure — a 5xx, or no answer once the node
// stopped — never "not found", a wrong value or a short list.
type readProbe struct {
	prefix string
	// outcomes counts the answers by kind ("right", "500", "no answer"...);
	// wrong lists the answers a client must never get.
	outcomes map[string]int
	wrong    []string
}

// write puts the probe keys through node via and waits until node at has
// them all (a read through it finds the last one).
func (p *readProbe) write(c *nemesis.Cluster, via, at int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range probeKeys {
		if _, err := c.Admin(via).KVPut(ctx, p.key(i), []byte(p.key(i)), client.PutOptions{}); err != nil {
			return fmt.Errorf("write the probe keys: %w", err)
		}
	}
	for {
		v, _, err := c.Admin(at).KVGet(ctx, p.key(probeKeys-1), client.GetOptions{})
		if err == nil && string(v) == p.key(probeKeys-1) {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("the probe keys never reached %s: %v", c.Nodes[at].ID, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (p *readProbe) key(i int) string { return fmt.Sprintf("%s%03d", p.prefix, i) }

// read reads every probe key, then lists them, through node at and
// classifies the answers.
func (p *readProbe) read(c *nemesis.Cluster, at int) {
	p.outcomes = map[string]int{}
	api := c.Admin(at)
	for i := range probeKeys {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		v, _, err := api.KVGet(ctx, p.key(i), client.GetOptions{})
		cancel()
		if err == nil && string(v) != p.key(i) {
			p.wrong = append(p.wrong, fmt.Sprintf("get %s = %q", p.key(i), v))
			continue
		}
		p.classify("get "+p.key(i), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	keys, err := api.KVList(ctx, p.prefix, "", probeKeys+1)
	cancel()
	if err == nil && len(keys) != probeKeys {
		p.wrong = append(p.wrong, fmt.Sprintf("list %s: %d keys of %d", p.prefix, len(keys), probeKeys))
		return
	}
	p.classify("list "+p.prefix, err)
}

// classify counts one answer: right, a 5xx, no answer; anything else
// (a 404, any 4xx) is wrong.
func (p *readProbe) classify(what string, err error) {
	var ce *client.Error
	switch {
	case err == nil:
		p.outcomes["right"]++
	case errors.As(err, &ce) && ce.Status >= 500:
		p.outcomes[fmt.Sprint(ce.Status)]++
	case errors.As(err, &ce):
		p.wrong = append(p.wrong, fmt.Sprintf("%s: %d %s", what, ce.Status, ce.Code))
	default:
		p.outcomes["no answer"]++
	}
}

// String sums the answers up.
func (p *readProbe) String() string {
	var parts []string
	for k, n := range p.outcomes {
		parts = append(parts, fmt.Sprintf("%d %s", n, k))
	}
	sort.Strings(parts)
	s := fmt.Sprintf("probe reads (%d gets, 1 list): %s", probeKeys, strings.Join(parts, ", "))
	if len(p.wrong) > 0 {
		s += fmt.Sprintf("; WRONG: %s", strings.Join(p.wrong, "; "))
	}
	return s
}
