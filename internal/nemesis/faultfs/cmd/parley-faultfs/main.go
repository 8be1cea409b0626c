// Command parley-faultfs mounts a fault-injecting loopback file system
// (package faultfs) for the nemesis tests:
//
//	parley-faultfs -backing DIR -mount DIR -control SOCKET -name NAME
//
// It serves until SIGTERM or SIGINT, then unmounts. Faults are set through
// the control socket (faultfs.Send).
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/parley-chat/parley/internal/nemesis/faultfs"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "parley-faultfs:", err)
		os.Exit(1)
	}
}

func run() error {
	backing := flag.String("backing", "", "the directory mirrored")
	mount := flag.String("mount", "", "where to mount it")
	control := flag.String("control", "", "the control socket's path")
	name := flag.String("name", "faultfs", "the mount's source name")
	flag.Parse()
	if *backing == "" || *mount == "" || *control == "" {
		return fmt.Errorf("-backing, -mount and -control are required")
	}
	var faults faultfs.Faults
	_ = os.Remove(*control)
	ln, err := net.Listen("unix", *control)
	if err != nil {
		return err
	}
	defer ln.Close()
	srv, err := faultfs.Mount(*backing, *mount, *name, &faults)
	if err != nil {
		return err
	}
	go func() { _ = faultfs.Serve(ln, &faults) }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	done := make(chan struct{})
	go func() { srv.Wait(); close(done) }()
	fmt.Println("mounted") // the harness waits for this line
	select {
	case <-sig:
		faults.Heal()
		if err := srv.Unmount(); err != nil {
			return err
		}
		<-done
	case <-done:
	}
	return nil
}
