// Package password hashes and verifies passwords with argon2id, stored as PHC
// strings ($argon2id$v=19$m=M,t=T,p=P$salt$key). It is the one home of
// password hashing: user accounts and private rooms both store these
// strings, and every node must verify what any other node hashed, so the
// format, its parser and its bounds are declared here once.
//
// A Hasher bounds how many hashes run at once (each takes Params.MemoryKiB of
// memory and tens of milliseconds of CPU). A node builds one and gives it to
// every service that hashes, so the bound holds for the node as a whole.
//
// Standard library and golang.org/x/crypto/argon2 only: domain packages
// import it.
package password
