// Package search is Parley's chat search: one Bleve index per partition
// replica this node holds, fed from the replica's applied room events, and
// the fan-out that asks one replica of every partition and merges the
// answers. The index is a derived cache (scorch files under the data dir,
// never reopened): Pebble, through the replica's state, stays the one
// source of truth, every hit is checked against it before it is shown, and
// the index is rebuilt from it whenever the replica is opened. Domain
// packages know nothing of Bleve: this is the one package that imports it.
// See DESIGN.md.
package search
