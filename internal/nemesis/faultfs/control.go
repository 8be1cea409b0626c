package faultfs

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// Control commands, one line each on the control socket; every command
// is answered with one line: "ok ..." with the counts, or "error ...".
//
//	delay 400ms     every write and fsync takes 400 ms longer (delay 0: none)
//	fsync-eio on    every fsync fails with EIO (off: stops)
//	read-eio on     every read of a *.sst file fails with EIO (off: stops)
//	heal            no faults
//	counts          only the counts
const maxControlLine = 256

// Serve answers control connections on ln until it is closed.
func Serve(ln net.Listener, f *Faults) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		go serveConn(c, f)
	}
}

// serveConn answers the commands of one connection.
func serveConn(c net.Conn, f *Faults) {
	defer c.Close()
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, maxControlLine), maxControlLine)
	for sc.Scan() {
		var answer string
		if err := f.Apply(sc.Text()); err != nil {
			answer = "error " + err.Error()
		} else {
			answer = "ok " + f.Counts().String()
		}
		if _, err := fmt.Fprintln(c, answer); err != nil {
			return
		}
	}
}

// Apply carries out one control command.
func (f *Faults) Apply(cmd string) error {
	verb, arg, _ := strings.Cut(strings.TrimSpace(cmd), " ")
	switch verb {
	case "delay":
		d, err := time.ParseDuration(arg)
		if err != nil || d < 0 {
			return fmt.Errorf("delay: want a duration, got %q", arg)
		}
		f.SetDelay(d)
	case "fsync-eio", "read-eio":
		on, err := onOff(arg)
		if err != nil {
			return fmt.Errorf("%s: %w", verb, err)
		}
		if verb == "fsync-eio" {
			f.SetFsyncEIO(on)
		} else {
			f.SetReadEIO(on)
		}
	case "heal":
		f.Heal()
	case "counts":
	default:
		return fmt.Errorf("unknown command %q", verb)
	}
	return nil
}

// onOff parses "on" or "off".
func onOff(s string) (bool, error) {
	switch s {
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, fmt.Errorf("want on or off, got %q", s)
}

// Send sends one command to the control socket at path and returns the
// answer's counts, or the error it names.
func Send(path, cmd string) (Counts, error) {
	var n Counts
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return n, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintln(c, cmd); err != nil {
		return n, err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return n, fmt.Errorf("faultfs %q: %w", cmd, err)
	}
	line = strings.TrimSpace(line)
	rest, ok := strings.CutPrefix(line, "ok ")
	if !ok {
		return n, fmt.Errorf("faultfs %q: %s", cmd, strings.TrimPrefix(line, "error "))
	}
	if _, err := fmt.Sscanf(rest, "delayed=%d fsyncs_failed=%d reads_failed=%d", &n.Delayed, &n.FsyncsFailed, &n.ReadsFailed); err != nil {
		return n, fmt.Errorf("faultfs %q: answer %q: %w", cmd, rest, err)
	}
	return n, nil
}
