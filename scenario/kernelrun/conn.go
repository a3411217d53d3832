package kernelrun

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// message is one message from an agent, without its type word, and the descriptors it passed.
// tooBig marks the agent's word that the result does not fit in a reply.
type message struct {
	words  []int64
	fds    []int
	tooBig bool
}

// conn is the runner's end of one task's socket. A goroutine reads it: replies go to msgs,
// hellos of new tasks (sent on their creator's socket) to the hello board.
type conn struct {
	uc   *net.UnixConn
	msgs chan message // closed at end of file: every copy of the agent's end is closed
	done chan struct{}
	once sync.Once
}

// helloBoard holds the sockets of new tasks, by host tid, until the runner claims them.
type helloBoard struct {
	mu     sync.Mutex
	fds    map[int]int
	notify chan struct{} // a token after each new hello
}

func newHelloBoard() *helloBoard {
	return &helloBoard{fds: map[int]int{}, notify: make(chan struct{}, 1)}
}

func (h *helloBoard) post(tid, fd int) {
	h.mu.Lock()
	if old, ok := h.fds[tid]; ok {
		unix.Close(old)
	}
	h.fds[tid] = fd
	h.mu.Unlock()
	select {
	case h.notify <- struct{}{}:
	default:
	}
}

// claim takes the socket the task with host tid sent, if it has.
func (h *helloBoard) claim(tid int) (int, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fd, ok := h.fds[tid]
	delete(h.fds, tid)
	return fd, ok
}

// closeAll closes the sockets nobody claimed.
func (h *helloBoard) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for tid, fd := range h.fds {
		unix.Close(fd)
		delete(h.fds, tid)
	}
}

// newConn takes over fd, a SOCK_SEQPACKET socket, and starts reading it.
func newConn(fd int, hellos *helloBoard) (*conn, error) {
	f := os.NewFile(uintptr(fd), "agent")
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		nc.Close()
		return nil, errors.New("agent socket is not a unix socket")
	}
	c := &conn{uc: uc, msgs: make(chan message, 16), done: make(chan struct{})}
	go c.read(hellos)
	return c, nil
}

func (c *conn) read(hellos *helloBoard) {
	defer close(c.msgs)
	buf := make([]byte, maxWords*8)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		n, oobn, _, _, err := c.uc.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 {
			return
		}
		var fds []int
		if cmsgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, cm := range cmsgs {
				if rights, err := unix.ParseUnixRights(&cm); err == nil {
					fds = append(fds, rights...)
				}
			}
		}
		words := make([]int64, n/8)
		for i := range words {
			words[i] = int64(binary.NativeEndian.Uint64(buf[8*i:]))
		}
		switch {
		case len(words) >= 2 && words[0] == msgHello && len(fds) == 1:
			hellos.post(int(words[1]), fds[0])
		case len(words) >= 2 && words[0] == msgReply, len(words) >= 1 && words[0] == msgTooBig:
			select {
			case c.msgs <- message{words: words[1:], fds: fds, tooBig: words[0] == msgTooBig}:
			case <-c.done:
				return
			}
		default:
			for _, fd := range fds {
				unix.Close(fd)
			}
		}
	}
}

// send sends one command.
func (c *conn) send(words []int64) error {
	buf := make([]byte, 8*len(words))
	for i, w := range words {
		binary.NativeEndian.PutUint64(buf[8*i:], uint64(w))
	}
	_, err := c.uc.Write(buf)
	return err
}

func (c *conn) close() {
	c.once.Do(func() {
		close(c.done)
		c.uc.Close()
	})
}

// tids lists the tasks whose sockets wait to be claimed.
func (h *helloBoard) tids() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	var tids []int
	for tid := range h.fds {
		tids = append(tids, tid)
	}
	return tids
}
