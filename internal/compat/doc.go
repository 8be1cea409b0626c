// Package compat is the one home of the versions a Parley build speaks and
// stores, and of the rules that let adjacent builds run side by side during
// a rolling upgrade (docs/UPGRADE.md):
//
//   - DataFormat is the layout of a data directory. The node record keeps
//     the format it was written with; a build opens a directory only in a
//     format it reads (CheckDataFormat) and refuses any other with a message
//     that says which build to run.
//   - Protocol is the version of everything nodes exchange: transport
//     frames and handshakes, internal RPC methods and their bodies, gossip
//     metadata and the encoding of replicated commands. A build speaks
//     MinProtocol through Protocol; two nodes talk when their ranges meet
//     (Compatible). A replicated command whose meaning is new at protocol N
//     may be proposed only once every member of the cluster speaks N
//     (ClusterProtocol), because an older replica would apply it otherwise.
//
// Build names the binary for operators (module version and commit).
package compat
