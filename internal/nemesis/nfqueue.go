package nemesis

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A delayer holds the packets an NFQUEUE rule hands it and releases each
// after a delay: the harness's stand-in for tc netem's delay and reorder on
// kernels built without sch_netem. It speaks nfnetlink_queue over a netlink
// socket opened inside the host's namespace.
type delayer struct {
	fd      int
	queue   uint16
	delay   time.Duration
	jitter  time.Duration
	reorder float64 // share of packets held one more delay, overtaken by later ones

	mu     sync.Mutex // serializes writes to fd and guards rng, closed
	rng    *rand.Rand
	closed bool
	done   chan struct{}
	wg     sync.WaitGroup
}

// nfnetlink_queue's message types and attributes (linux/netfilter/nfnetlink_queue.h).
const (
	nfqMsgPacket  = 3<<8 | 0
	nfqMsgVerdict = 3<<8 | 1
	nfqMsgConfig  = 3<<8 | 2
	nfqaPacketHdr = 1
	nfqaVerdict   = 2
	nfqaCfgCmd    = 1
	nfqaCfgParams = 2
	nfqCmdBind    = 1
	nfqCopyMeta   = 1
	nfAccept      = 1
)

// startDelayer binds queue in namespace ns and starts releasing packets.
func startDelayer(ns string, queue uint16, delay, jitter time.Duration, reorder float64) (*delayer, error) {
	fd, err := netlinkIn(ns)
	if err != nil {
		return nil, err
	}
	d := &delayer{fd: fd, queue: queue, delay: delay, jitter: jitter, reorder: reorder,
		rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(queue))), done: make(chan struct{})}
	tv := unix.NsecToTimeval(int64(200 * time.Millisecond))
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	cmd := []byte{nfqCmdBind, 0, 0, unix.AF_INET}
	params := binary.BigEndian.AppendUint32(nil, 0)
	params = append(params, nfqCopyMeta)
	for _, a := range [][]byte{attr(nfqaCfgCmd, cmd), attr(nfqaCfgParams, params)} {
		if err := d.request(nfqMsgConfig, a); err != nil {
			_ = unix.Close(fd)
			return nil, fmt.Errorf("nfqueue %d in %s: %w", queue, ns, err)
		}
	}
	d.wg.Add(1)
	go d.loop()
	return d, nil
}

// netlinkIn opens a netfilter netlink socket inside namespace ns, on a
// thread of its own that is dropped if it cannot return to its namespace.
func netlinkIn(ns string) (int, error) {
	type result struct {
		fd  int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			ch <- result{-1, err}
			return
		}
		defer unix.Close(orig)
		target, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{-1, err}
			return
		}
		defer unix.Close(target)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{-1, fmt.Errorf("setns %s: %w", ns, err)}
			return
		}
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
		if err == nil {
			err = unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		}
		if unix.Setns(orig, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread() // back home; otherwise the thread dies with the goroutine
		}
		ch <- result{fd, err}
	}()
	r := <-ch
	return r.fd, r.err
}

// attr encodes one netlink attribute, padded to four bytes.
func attr(typ uint16, payload []byte) []byte {
	b := binary.NativeEndian.AppendUint16(nil, uint16(4+len(payload)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, payload...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// message encodes a netfilter netlink message for the delayer's queue.
func (d *delayer) message(typ uint16, flags uint16, attrs []byte) []byte {
	b := binary.NativeEndian.AppendUint32(nil, uint32(16+4+len(attrs)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = binary.NativeEndian.AppendUint16(b, flags)
	b = binary.NativeEndian.AppendUint32(b, 0) // seq
	b = binary.NativeEndian.AppendUint32(b, 0) // port id: the kernel's
	b = append(b, unix.AF_UNSPEC, 0)
	b = binary.BigEndian.AppendUint16(b, d.queue)
	return append(b, attrs...)
}

// request sends a configuration message and waits for its acknowledgement.
func (d *delayer) request(typ uint16, attrs []byte) error {
	if err := unix.Sendto(d.fd, d.message(typ, unix.NLM_F_REQUEST|unix.NLM_F_ACK, attrs), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 8192)
	n, _, err := unix.Recvfrom(d.fd, buf, 0)
	if err != nil {
		return err
	}
	if n < 20 || binary.NativeEndian.Uint16(buf[4:]) != unix.NLMSG_ERROR {
		return errors.New("no acknowledgement")
	}
	if code := int32(binary.NativeEndian.Uint32(buf[16:])); code != 0 {
		return unix.Errno(-code)
	}
	return nil
}

// loop reads queued packets and schedules each one's release.
func (d *delayer) loop() {
	defer d.wg.Done()
	buf := make([]byte, 1<<16)
	for {
		select {
		case <-d.done:
			return
		default:
		}
		n, _, err := unix.Recvfrom(d.fd, buf, 0)
		if err != nil {
			continue // timeout (to look at done) or ENOBUFS (the kernel dropped packets)
		}
		for msg := buf[:n]; len(msg) >= 16; {
			size := int(binary.NativeEndian.Uint32(msg))
			if size < 16 || size > len(msg) {
				break
			}
			if binary.NativeEndian.Uint16(msg[4:]) == nfqMsgPacket {
				if id, ok := packetID(msg[16+4 : size]); ok {
					time.AfterFunc(d.hold(), func() { d.accept(id) })
				}
			}
			msg = msg[(size+3)&^3:]
		}
	}
}

// packetID finds the packet id in a packet message's attributes.
func packetID(attrs []byte) (uint32, bool) {
	for len(attrs) >= 4 {
		l, typ := int(binary.NativeEndian.Uint16(attrs)), binary.NativeEndian.Uint16(attrs[2:])&0x3fff
		if l < 4 || l > len(attrs) {
			return 0, false
		}
		if typ == nfqaPacketHdr && l >= 8 {
			return binary.BigEndian.Uint32(attrs[4:]), true
		}
		attrs = attrs[(l+3)&^3:]
	}
	return 0, false
}

// hold draws how long one packet is held.
func (d *delayer) hold() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	h := d.delay
	if d.jitter > 0 {
		h += time.Duration(d.rng.Int64N(int64(2*d.jitter))) - d.jitter
	}
	if d.reorder > 0 && d.rng.Float64() < d.reorder {
		h += d.delay
	}
	return max(h, 0)
}

// accept releases packet id.
func (d *delayer) accept(id uint32) {
	v := binary.BigEndian.AppendUint32(nil, nfAccept)
	v = binary.BigEndian.AppendUint32(v, id)
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.closed {
		_ = unix.Sendto(d.fd, d.message(nfqMsgVerdict, unix.NLM_F_REQUEST, attr(nfqaVerdict, v)), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
	}
}

// close stops the delayer; packets still held are dropped by the kernel
// (TCP sends them again), as a link that went away would.
func (d *delayer) close() {
	close(d.done)
	d.wg.Wait()
	d.mu.Lock()
	d.closed = true
	_ = unix.Close(d.fd)
	d.mu.Unlock()
}
