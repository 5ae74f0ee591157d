//go:build linux

package netns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Host is one machine of the cluster: a network namespace with an address.
type Host struct {
	// Immutable after New.
	c      *Cluster
	index  int // into c.hosts; -1 for the client
	name   string
	ns     string
	subnet int
	addr   netip.Addr

	mu   sync.Mutex
	http *http.Client // guarded by mu: made on first use
}

// Name returns "h1".."hN", or "client".
func (h *Host) Name() string { return h.name }

// Namespace returns the network namespace's name (for `ip netns exec`).
func (h *Host) Namespace() string { return h.ns }

// Addr returns the host's IPv4 address, e.g. "10.77.1.2".
func (h *Host) Addr() string { return h.addr.String() }

// Subnet returns 1 or 2.
func (h *Host) Subnet() int { return h.subnet }

// Exec runs a one-off command inside the host's namespace and returns its
// combined output; a failure is a *CmdError carrying that output.
func (h *Host) Exec(ctx context.Context, argv ...string) ([]byte, error) {
	if len(argv) == 0 {
		return nil, errors.New("netns: Exec: empty argv")
	}
	return run(ctx, h.ns, argv[0], argv[1:]...)
}

// Pids returns the pids of every process in the host's namespace, including
// children that left the process group of the Proc that started them.
func (h *Host) Pids() ([]int, error) {
	out, err := run(context.Background(), "", "ip", "netns", "pids", h.ns)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		var pid int
		if _, err := fmt.Sscan(f, &pid); err == nil {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	return pids, nil
}

// KillAll sends SIGKILL to every process in the host's namespace, as when a
// machine loses power, and waits for the Procs started on it to exit.
func (h *Host) KillAll() {
	h.c.mu.Lock()
	var mine []*Proc
	for _, p := range h.c.procs {
		if p.host == h {
			mine = append(mine, p)
		}
	}
	h.c.mu.Unlock()
	for _, p := range mine {
		p.kill()
	}
	pids, _ := h.Pids() // a failure here shows again in cleanup
	for _, pid := range pids {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	for _, p := range mine {
		<-p.done
	}
}

// DialContext connects to address (an IP literal and a port) from inside
// the host's namespace. The socket is created on an OS thread switched into
// the namespace and keeps it, so the returned connection can be used from
// any goroutine.
func (h *Host) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	if err := literal(address); err != nil {
		return nil, err
	}
	var conn net.Conn
	err := h.in(func() (err error) {
		var d net.Dialer
		conn, err = d.DialContext(ctx, network, address)
		return err
	})
	return conn, err
}

// Listen listens on address (an IP literal or "" host, and a port) inside
// the host's namespace, for a server run by the test process itself.
func (h *Host) Listen(network, address string) (net.Listener, error) {
	if host, _, err := net.SplitHostPort(address); err == nil && host != "" {
		if err := literal(address); err != nil {
			return nil, err
		}
	}
	var l net.Listener
	err := h.in(func() (err error) {
		l, err = net.Listen(network, address)
		return err
	})
	return l, err
}

// literal refuses host names: resolving one may run on other threads, in
// the root namespace.
func literal(address string) error {
	if _, err := netip.ParseAddrPort(address); err != nil {
		return fmt.Errorf("netns: %q is not an IP literal and a port: %w", address, err)
	}
	return nil
}

// HTTPClient returns a client whose connections are made from inside the
// host's namespace.
func (h *Host) HTTPClient() *http.Client {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.http == nil {
		h.http = &http.Client{
			Transport: &http.Transport{DialContext: h.DialContext, MaxIdleConnsPerHost: 4},
			Timeout:   30 * time.Second,
		}
	}
	return h.http
}

func (h *Host) closeIdle() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.http != nil {
		h.http.CloseIdleConnections()
	}
}

// Get fetches url from the client host.
func (c *Cluster) Get(url string) (*http.Response, error) {
	return c.client.HTTPClient().Get(url)
}

// Post posts body to url from the client host.
func (c *Cluster) Post(url, contentType string, body io.Reader) (*http.Response, error) {
	return c.client.HTTPClient().Post(url, contentType, body)
}

// in runs fn on a fresh OS thread switched into the host's namespace. The
// thread is switched back afterwards; if that fails it stays locked, so the
// runtime ends it with the goroutine and no other goroutine runs in the
// wrong namespace.
func (h *Host) in(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		errc <- h.inLocked(fn)
	}()
	return <-errc
}

// inLocked does the work of in on the locked thread; it unlocks the thread
// only when the thread is back in its own namespace.
func (h *Host) inLocked(fn func() error) error {
	orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		return fmt.Errorf("netns: %w", err)
	}
	defer orig.Close()
	target, err := os.Open("/run/netns/" + h.ns)
	if err != nil {
		return fmt.Errorf("netns: %w", err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("netns: setns into %s: %w", h.ns, err)
	}
	ferr := fn()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		return errors.Join(ferr, fmt.Errorf("netns: setns back from %s: %w", h.ns, err))
	}
	runtime.UnlockOSThread()
	return ferr
}

// Partition cuts the host off from every other host (not from the client):
// packets between them are dropped, in both directions. Its processes keep
// running and their sockets stay open.
func (h *Host) Partition() {
	h.c.t.Helper()
	if h == h.c.client {
		h.c.t.Fatalf("netns: the client host is never partitioned")
	}
	h.c.mu.Lock()
	for _, o := range h.c.hosts {
		if o != h {
			h.c.blocked[pair(h, o)] = true
		}
	}
	h.c.mu.Unlock()
	h.c.apply()
}

// Heal removes every cut between this host and the others.
func (h *Host) Heal() {
	h.c.t.Helper()
	h.c.mu.Lock()
	for k := range h.c.blocked {
		if k[0] == h.index || k[1] == h.index {
			delete(h.c.blocked, k)
		}
	}
	h.c.mu.Unlock()
	h.c.apply()
}

// PartitionGroups cuts every host of a off from every host of b. Hosts on
// the same side still reach each other; hosts on neither side are not
// affected.
func (c *Cluster) PartitionGroups(a, b []*Host) {
	c.t.Helper()
	c.mu.Lock()
	for _, x := range a {
		for _, y := range b {
			if x.c != c || y.c != c || x == c.client || y == c.client {
				c.mu.Unlock()
				c.t.Fatalf("netns: PartitionGroups takes hosts of this cluster, not the client")
			}
			if x != y {
				c.blocked[pair(x, y)] = true
			}
		}
	}
	c.mu.Unlock()
	c.apply()
}

// CutOneWay drops the packets from reaching to: to still reaches from,
// as on a link that fails in one direction only.
func (c *Cluster) CutOneWay(from, to *Host) {
	c.t.Helper()
	if from == c.client || to == c.client || from == to {
		c.t.Fatalf("netns: CutOneWay takes two hosts of this cluster, not the client")
	}
	c.mu.Lock()
	c.oneway[[2]int{from.index, to.index}] = true
	c.mu.Unlock()
	c.apply()
}

// HealAll removes every cut.
func (c *Cluster) HealAll() {
	c.t.Helper()
	c.mu.Lock()
	clear(c.blocked)
	clear(c.oneway)
	c.mu.Unlock()
	c.apply()
}

func pair(a, b *Host) [2]int {
	if a.index > b.index {
		a, b = b, a
	}
	return [2]int{a.index, b.index}
}

// apply writes every host's INPUT chain from c.blocked: a host drops the
// packets whose source is a host it is cut from. Dropping on receipt at
// both ends cuts both directions while sends still succeed, as on a real
// broken link.
func (c *Cluster) apply() {
	c.t.Helper()
	if !c.opt.Partitions {
		c.t.Fatalf("netns: cutting links needs Options.Partitions, so that the test skips where iptables is missing")
	}
	c.mu.Lock()
	rules := make([]string, len(c.hosts))
	for k := range c.blocked {
		a, b := c.hosts[k[0]], c.hosts[k[1]]
		rules[a.index] += "-A INPUT -s " + b.Addr() + "/32 -j DROP\n"
		rules[b.index] += "-A INPUT -s " + a.Addr() + "/32 -j DROP\n"
	}
	for k := range c.oneway {
		from, to := c.hosts[k[0]], c.hosts[k[1]]
		rules[to.index] += "-A INPUT -s " + from.Addr() + "/32 -j DROP\n"
	}
	c.mu.Unlock()
	for i, h := range c.hosts {
		script := "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n" + rules[i] + "COMMIT\n"
		if err := h.restore(script); err != nil {
			c.t.Fatal(err)
		}
	}
}

// restore replaces the host's filter table with script.
func (h *Host) restore(script string) error {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	argv := []string{"ip", "netns", "exec", h.ns, iptablesRestore, "-w", "5"}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		return &CmdError{Namespace: h.ns, Args: argv, Err: err, Output: string(out) + "\ninput:\n" + script}
	}
	return nil
}
