// Package connlimit caps the client connections a node holds open: per
// client address, so that one host cannot take every connection a node can
// serve, and in all, so that clients cannot take the file descriptors the
// node's store and cluster port need.
//
// A Limiter is shared by a node's client listeners (the API and the links
// listener): a connection counts from the moment it is accepted until it is
// closed, whichever listener took it. A connection past a limit is closed at
// once, before any byte is read or written (before a TLS handshake too), as
// HAProxy's maxconn and nginx's limit_conn refuse at the socket; the
// listener then goes on accepting. Loopback addresses are counted like any
// other.
package connlimit
