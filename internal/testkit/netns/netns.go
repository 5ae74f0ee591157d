//go:build linux

package netns

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Options shape a Cluster.
type Options struct {
	// Hosts is the number of hosts, 1 to 252.
	Hosts int
	// Subnets is 1 (every host on one bridge; multicast reaches all) or 2
	// (hosts h1..h⌈n/2⌉ on 10.77.1.0/24, the rest on 10.77.2.0/24, routed
	// through a router namespace; multicast stays on its own subnet). 0
	// means 1.
	Subnets int
	// Prefix starts every namespace name; lowercase letters and digits, at
	// most 12. Namespaces with this prefix left by a dead run are removed by
	// New. "" means "skt".
	Prefix string
	// StopGrace is how long Proc.Stop waits after SIGTERM before SIGKILL.
	// 0 means 5s.
	StopGrace time.Duration
	// Partitions says the test cuts links (Partition, PartitionGroups,
	// Heal, HealAll), which takes iptables: New skips the test, saying so,
	// where iptables-restore is not installed. A cluster made without it
	// fails the test at its first cut.
	Partitions bool
}

// Cluster is a set of hosts in network namespaces, joined by bridges.
type Cluster struct {
	// Immutable after New.
	t        testing.TB
	opt      Options
	id       string // <prefix>-<pid>-<seq>: starts every namespace name
	hosts    []*Host
	client   *Host
	switchNS string
	routerNS string   // "" with one subnet
	created  []string // namespaces, in creation order

	mu      sync.Mutex
	blocked map[[2]int]bool // guarded by mu: host index pairs, low index first
	oneway  map[[2]int]bool // guarded by mu: (from, to) host indexes cut in that direction only
	procs   []*Proc         // guarded by mu: every process started, for cleanup
}

const (
	iptablesRestore = "iptables-restore"
	cmdTimeout      = 30 * time.Second
	clientOctet     = 253
	routerOctet     = 254
)

var (
	prefixRE = regexp.MustCompile(`^[a-z0-9]{1,12}$`)
	seq      atomic.Int64 // numbers the clusters of this process
)

// New builds a cluster and registers its removal with t.Cleanup. It skips
// the test when not root or when `ip netns` does not work, and fails it on a
// bad Options or a failed setup command.
func New(t testing.TB, opt Options) *Cluster {
	t.Helper()
	if opt.Subnets == 0 {
		opt.Subnets = 1
	}
	if opt.Prefix == "" {
		opt.Prefix = "skt"
	}
	if opt.StopGrace == 0 {
		opt.StopGrace = 5 * time.Second
	}
	switch {
	case opt.Hosts < 1 || opt.Hosts > 252:
		t.Fatalf("netns: Options.Hosts is %d, want 1 to 252", opt.Hosts)
	case opt.Subnets != 1 && opt.Subnets != 2:
		t.Fatalf("netns: Options.Subnets is %d, want 1 or 2", opt.Subnets)
	case !prefixRE.MatchString(opt.Prefix):
		t.Fatalf("netns: Options.Prefix %q is not 1 to 12 lowercase letters or digits", opt.Prefix)
	}
	if reason := unavailable(); reason != "" {
		t.Skipf("netns: %s; skipping a multi-host test", reason)
	}
	if opt.Partitions {
		if _, err := exec.LookPath(iptablesRestore); err != nil {
			t.Skipf("netns: partitions need %s, which is not installed (apt-get install iptables); skipping a test that cuts links", iptablesRestore)
		}
	}
	if err := RemoveStale(opt.Prefix); err != nil {
		t.Fatal(err)
	}
	c := &Cluster{
		t:       t,
		opt:     opt,
		id:      fmt.Sprintf("%s-%d-%d", opt.Prefix, os.Getpid(), seq.Add(1)),
		blocked: map[[2]int]bool{},
		oneway:  map[[2]int]bool{},
	}
	t.Cleanup(c.cleanup)
	if err := c.build(); err != nil {
		t.Fatal(err)
	}
	return c
}

// unavailable says why namespaces cannot be made here, or "" when they can.
func unavailable() string {
	if os.Geteuid() != 0 {
		return "not root (network namespaces need CAP_SYS_ADMIN)"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return "the ip command (iproute2) is not installed"
	}
	if _, err := run(context.Background(), "", "ip", "netns", "list"); err != nil {
		return fmt.Sprintf("`ip netns` does not work: %v", err)
	}
	return ""
}

// build creates the namespaces, bridges, veths, addresses and routes.
func (c *Cluster) build() error {
	c.switchNS = c.id + "-sw"
	if err := c.addNS(c.switchNS); err != nil {
		return err
	}
	for s := 1; s <= c.opt.Subnets; s++ {
		br := "br" + strconv.Itoa(s)
		// Snooping off: the bridge floods multicast to every port, as a
		// dumb switch does.
		if err := c.ip(c.switchNS, "link", "add", "name", br, "type", "bridge", "mcast_snooping", "0"); err != nil {
			return err
		}
		if err := c.ip(c.switchNS, "link", "set", br, "up"); err != nil {
			return err
		}
	}
	if c.opt.Subnets == 2 {
		c.routerNS = c.id + "-rt"
		if err := c.addNS(c.routerNS); err != nil {
			return err
		}
		for s := 1; s <= 2; s++ {
			dev := "eth" + strconv.Itoa(s)
			if err := c.plug(c.routerNS, dev, "r"+strconv.Itoa(s), s, addrOf(s, routerOctet)); err != nil {
				return err
			}
		}
		if err := c.sysctl(c.routerNS, "net/ipv4/ip_forward", "1"); err != nil {
			return err
		}
	}
	perSubnet := (c.opt.Hosts + c.opt.Subnets - 1) / c.opt.Subnets
	for i := range c.opt.Hosts {
		n := i + 1
		h := &Host{c: c, index: i, name: "h" + strconv.Itoa(n), subnet: 1 + i/perSubnet}
		h.ns = c.id + "-" + h.name
		h.addr = addrOf(h.subnet, n)
		c.hosts = append(c.hosts, h)
	}
	c.client = &Host{c: c, index: -1, name: "client", subnet: 1, ns: c.id + "-cl", addr: addrOf(1, clientOctet)}
	for _, h := range c.all() {
		if err := c.addHost(h); err != nil {
			return err
		}
	}
	return nil
}

func addrOf(subnet, octet int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, 77, byte(subnet), byte(octet)})
}

// addHost creates h's namespace and plugs it into its subnet's bridge.
func (c *Cluster) addHost(h *Host) error {
	if err := c.addNS(h.ns); err != nil {
		return err
	}
	port := h.name
	if h == c.client {
		port = "cl"
	}
	if err := c.plug(h.ns, "eth0", port, h.subnet, h.addr); err != nil {
		return err
	}
	// Multicast on lo and a multicast route on the LAN, so that mDNS works
	// across one bridge.
	if err := c.ip(h.ns, "link", "set", "lo", "multicast", "on"); err != nil {
		return err
	}
	if err := c.ip(h.ns, "route", "add", "224.0.0.0/4", "dev", "eth0"); err != nil {
		return err
	}
	if c.routerNS != "" {
		if err := c.ip(h.ns, "route", "add", "default", "via", addrOf(h.subnet, routerOctet).String()); err != nil {
			return err
		}
	}
	return nil
}

// addNS creates a namespace with lo up and IPv6 off, and records it for
// cleanup.
func (c *Cluster) addNS(ns string) error {
	if _, err := run(context.Background(), "", "ip", "netns", "add", ns); err != nil {
		return err
	}
	c.created = append(c.created, ns)
	for _, key := range []string{"net/ipv6/conf/all/disable_ipv6", "net/ipv6/conf/default/disable_ipv6"} {
		if err := c.sysctl(ns, key, "1"); err != nil {
			return err
		}
	}
	return c.ip(ns, "link", "set", "lo", "up")
}

// plug creates a veth pair whose end dev (with addr/24) lives in ns and
// whose end port is attached to subnet's bridge in the switch namespace.
func (c *Cluster) plug(ns, dev, port string, subnet int, addr netip.Addr) error {
	steps := [][]string{
		{c.switchNS, "link", "add", "name", port, "type", "veth", "peer", "name", dev, "netns", ns},
		{c.switchNS, "link", "set", port, "master", "br" + strconv.Itoa(subnet), "up"},
		{ns, "addr", "add", addr.String() + "/24", "dev", dev},
		{ns, "link", "set", dev, "up"},
	}
	for _, s := range steps {
		if err := c.ip(s[0], s[1:]...); err != nil {
			return err
		}
	}
	return nil
}

// ip runs `ip -n ns args...`.
func (c *Cluster) ip(ns string, args ...string) error {
	_, err := run(context.Background(), "", "ip", append([]string{"-n", ns}, args...)...)
	return err
}

// sysctl writes value to /proc/sys/key inside ns.
func (c *Cluster) sysctl(ns, key, value string) error {
	_, err := run(context.Background(), ns, "sh", "-c", `echo "$1" > "/proc/sys/$2"`, "sh", value, key)
	return err
}

// run runs a command, inside namespace ns unless ns is "", and returns its
// combined output; a failure is a *CmdError.
func run(ctx context.Context, ns string, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, cmdTimeout)
	defer cancel()
	argv := append([]string{name}, args...)
	if ns != "" {
		argv = append([]string{"ip", "netns", "exec", ns}, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		return out.Bytes(), &CmdError{Namespace: ns, Args: argv, Err: err, Output: out.String()}
	}
	return out.Bytes(), nil
}

// Hosts returns the hosts h1..hN in order (not the client).
func (c *Cluster) Hosts() []*Host { return append([]*Host(nil), c.hosts...) }

// Host returns host hN, counting from 1.
func (c *Cluster) Host(n int) *Host { return c.hosts[n-1] }

// all returns the hosts and the client, in a new slice.
func (c *Cluster) all() []*Host {
	all := append([]*Host(nil), c.hosts...)
	if c.client != nil {
		all = append(all, c.client)
	}
	return all
}

// Client returns the extra host the test process uses to reach the others.
// It is on subnet 1 and is never partitioned.
func (c *Cluster) Client() *Host { return c.client }

// Namespaces returns the names of every namespace of the cluster: switch,
// router (with two subnets), hosts and client.
func (c *Cluster) Namespaces() []string { return append([]string(nil), c.created...) }

// cleanup kills every process and removes every namespace; it reports
// failures with t.Errorf and carries on.
func (c *Cluster) cleanup() {
	c.mu.Lock()
	procs := append([]*Proc(nil), c.procs...)
	c.mu.Unlock()
	for _, p := range procs {
		p.kill()
	}
	for _, h := range c.all() {
		h.closeIdle()
	}
	failed := c.t.Failed()
	for _, p := range procs {
		<-p.done
		if failed {
			c.t.Logf("netns: output of %s on %s (%v):\n%s", p.name, p.host.name, p.Wait(), p.log.tail(60))
		}
	}
	// Remove in reverse order: hosts first, the switch last.
	for i := len(c.created) - 1; i >= 0; i-- {
		if err := removeNS(c.created[i]); err != nil {
			c.t.Errorf("netns: cleanup: %v", err)
		}
	}
}

// removeNS kills every process in ns and deletes it.
func removeNS(ns string) error {
	var errs []error
	for range 50 {
		out, err := run(context.Background(), "", "ip", "netns", "pids", ns)
		if err != nil {
			errs = append(errs, err)
			break
		}
		pids := strings.Fields(string(out))
		if len(pids) == 0 {
			break
		}
		for _, s := range pids {
			if pid, err := strconv.Atoi(s); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL) // ESRCH: gone already
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := run(context.Background(), "", "ip", "netns", "del", ns); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// RemoveStale removes every namespace named <prefix>-<pid>-… whose pid is no
// longer running, with the processes inside it: what a killed run left.
// New calls it; namespaces of live runs (parallel test binaries) are kept.
func RemoveStale(prefix string) error {
	out, err := run(context.Background(), "", "ip", "netns", "list")
	if err != nil {
		return err
	}
	var errs []error
	for _, ns := range staleNames(out, prefix, alive) {
		if err := removeNS(ns); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// staleNames picks from `ip netns list` output the namespaces of prefix
// whose owner pid is not alive.
func staleNames(list []byte, prefix string, alive func(pid int) bool) []string {
	var stale []string
	sc := bufio.NewScanner(bytes.NewReader(list))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		ns := fields[0]
		rest, ok := strings.CutPrefix(ns, prefix+"-")
		if !ok {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 {
			continue
		}
		if !alive(pid) {
			stale = append(stale, ns)
		}
	}
	return stale
}

// alive reports whether pid runs; a zombie (killed, not yet reaped) does not.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	// The state follows the parenthesised command name, which may itself
	// hold spaces and parentheses.
	_, after, ok := bytes.Cut(stat[bytes.LastIndexByte(stat, ')')+1:], []byte(" "))
	return !ok || len(after) == 0 || (after[0] != 'Z' && after[0] != 'X')
}
