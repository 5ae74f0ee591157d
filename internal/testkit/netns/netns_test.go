//go:build linux

package netns_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/testkit/netns"
)

const wait = 10 * time.Second

// start runs a helper on h and waits for its first line matching ready.
func start(t *testing.T, h *netns.Host, name, ready string, args ...string) *netns.Proc {
	t.Helper()
	argv, env := helper(t, args...)
	p := h.Start(name, argv, env)
	if ready != "" {
		if _, err := p.WaitLog(ready, wait); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// dial runs the dial-once helper on from against addr and reports whether
// it got its echo back.
func dial(t *testing.T, from *netns.Host, addr string) error {
	t.Helper()
	argv, env := helper(t, "dial-once", addr)
	p := from.Start("dial "+addr, argv, env)
	err := p.Wait()
	if err == nil && !strings.Contains(p.Output(), "ok hello") {
		return fmt.Errorf("dial-once exited 0 without an echo: %q", p.Output())
	}
	if err != nil {
		return fmt.Errorf("%v: %s", err, p.Output())
	}
	return nil
}

func TestTwoHostsTalk(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 2})
	h1, h2 := c.Host(1), c.Host(2)
	if h1.Addr() != "10.77.1.1" || h2.Addr() != "10.77.1.2" || c.Client().Addr() != "10.77.1.253" {
		t.Fatalf("addresses %s %s %s, want 10.77.1.1 10.77.1.2 10.77.1.253", h1.Addr(), h2.Addr(), c.Client().Addr())
	}
	start(t, h1, "echo", "^listening", "echo-server", h1.Addr()+":7000")
	if err := dial(t, h2, h1.Addr()+":7000"); err != nil {
		t.Fatalf("h2 -> h1: %v", err)
	}
	// The test process, from h2's namespace.
	conn, err := h2.DialContext(t.Context(), "tcp", h1.Addr()+":7000")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if got := conn.LocalAddr().String(); !strings.HasPrefix(got, h2.Addr()+":") {
		t.Errorf("a socket dialled from h2 has local address %s, want %s:*", got, h2.Addr())
	}
	fmt.Fprintln(conn, "via dialer")
	if line, err := bufio.NewReader(conn).ReadString('\n'); err != nil || line != "via dialer\n" {
		t.Fatalf("echo = %q, %v", line, err)
	}
	// Each host: lo up with multicast, the multicast route on eth0.
	for _, h := range c.Hosts() {
		out, err := h.Exec(t.Context(), "ip", "link", "show", "lo")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), "MULTICAST") || !strings.Contains(string(out), "UP") {
			t.Errorf("%s lo: %s", h.Name(), out)
		}
		out, err = h.Exec(t.Context(), "ip", "route", "show", "224.0.0.0/4")
		if err != nil || !strings.Contains(string(out), "dev eth0") {
			t.Errorf("%s multicast route: %q %v", h.Name(), out, err)
		}
	}
	// Nothing is routed out of a one-subnet host, and Exec reports failures
	// with their output.
	_, err = h1.Exec(t.Context(), "ip", "route", "get", "192.0.2.1")
	var ce *netns.CmdError
	if !errors.As(err, &ce) || !strings.Contains(ce.Output, "unreachable") || ce.Namespace != h1.Namespace() {
		t.Errorf("ip route get 192.0.2.1 on h1: %v, want a *CmdError saying unreachable", err)
	}
}

func TestPartitionAndHeal(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 3, Partitions: true})
	h1, h2, h3 := c.Host(1), c.Host(2), c.Host(3)
	server := start(t, h1, "echo", "^listening", "echo-server", h1.Addr()+":7000")
	client := start(t, h2, "echo-client", `^echo seq 3$`, "echo-client", h1.Addr()+":7000")

	h1.Partition()
	for _, from := range []*netns.Host{h2, h3} {
		if err := dial(t, from, h1.Addr()+":7000"); err == nil {
			t.Errorf("%s reached the partitioned h1", from.Name())
		}
	}
	mark := client.Lines()
	if _, err := client.WaitLogFrom(mark, `^echo`, 1500*time.Millisecond); err == nil {
		t.Fatalf("the held connection still echoes across the partition:\n%s", client.Output())
	}
	// The client host is never cut off.
	if err := dial(t, c.Client(), h1.Addr()+":7000"); err != nil {
		t.Errorf("client -> partitioned h1: %v", err)
	}

	// TCP retransmits with exponential backoff, so the held connection
	// resumes at the first retransmission after Heal: within seconds for a
	// partition this short, but allow for a loaded machine.
	h1.Heal()
	if _, err := client.WaitLogFrom(mark, `^echo seq \d+$`, time.Minute); err != nil {
		t.Fatalf("the held connection did not resume after Heal: %v", err)
	}
	if !server.Running() || !client.Running() {
		t.Fatalf("a process died across the partition: server %v, client %v\n%s", server.Running(), client.Running(), client.Output())
	}
	if err := dial(t, h3, h1.Addr()+":7000"); err != nil {
		t.Errorf("h3 -> healed h1: %v", err)
	}
}

func TestPartitionGroups(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 3, Partitions: true})
	h1, h2, h3 := c.Host(1), c.Host(2), c.Host(3)
	for _, h := range c.Hosts() {
		start(t, h, "echo", "^listening", "echo-server", h.Addr()+":7000")
	}
	c.PartitionGroups([]*netns.Host{h1, h2}, []*netns.Host{h3})
	tests := []struct {
		from, to *netns.Host
		reach    bool
	}{
		{h1, h2, true}, {h2, h1, true},
		{h1, h3, false}, {h3, h1, false}, {h2, h3, false}, {h3, h2, false},
	}
	for _, tt := range tests {
		err := dial(t, tt.from, tt.to.Addr()+":7000")
		if (err == nil) != tt.reach {
			t.Errorf("%s -> %s during the split: err %v, want reachable %v", tt.from.Name(), tt.to.Name(), err, tt.reach)
		}
	}
	c.HealAll()
	for _, tt := range tests {
		if err := dial(t, tt.from, tt.to.Addr()+":7000"); err != nil {
			t.Errorf("%s -> %s after HealAll: %v", tt.from.Name(), tt.to.Name(), err)
		}
	}
}

func TestTwoSubnets(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 4, Subnets: 2})
	h1, h2, h3, h4 := c.Host(1), c.Host(2), c.Host(3), c.Host(4)
	for _, h := range c.Hosts() {
		want := map[string]int{"h1": 1, "h2": 1, "h3": 2, "h4": 2}[h.Name()]
		if h.Subnet() != want || h.Addr() != fmt.Sprintf("10.77.%d.%s", want, h.Name()[1:]) {
			t.Errorf("%s on subnet %d at %s", h.Name(), h.Subnet(), h.Addr())
		}
	}
	// Unicast is routed across.
	start(t, h4, "echo", "^listening", "echo-server", h4.Addr()+":7000")
	if err := dial(t, h1, h4.Addr()+":7000"); err != nil {
		t.Fatalf("h1 (subnet 1) -> h4 (subnet 2): %v", err)
	}
	// Multicast stays on its subnet.
	near := start(t, h2, "mcast-recv", "^ready$", "mcast-recv", "224.0.0.251:5353")
	far := start(t, h3, "mcast-recv", "^ready$", "mcast-recv", "224.0.0.251:5353")
	sender := start(t, h1, "mcast-send", "", "mcast-send", "224.0.0.251:5353")
	if err := sender.Wait(); err != nil {
		t.Fatalf("mcast-send: %v\n%s", err, sender.Output())
	}
	if _, err := near.WaitLog(`^got mcast-\d from 10\.77\.1\.1:`, wait); err != nil {
		t.Fatalf("a listener on the sender's subnet got no multicast: %v", err)
	}
	// The far listener can hear h1: a unicast datagram arrives...
	uni := start(t, h1, "udp-send", "", "udp-send", h3.Addr()+":5353", "unicast")
	if err := uni.Wait(); err != nil {
		t.Fatalf("udp-send: %v\n%s", err, uni.Output())
	}
	if _, err := far.WaitLog(`^got unicast-0 from 10\.77\.1\.1:`, wait); err != nil {
		t.Fatalf("unicast from subnet 1 did not reach the far listener: %v", err)
	}
	// ...but none of the multicast datagrams, sent before it, did.
	if strings.Contains(far.Output(), "mcast") {
		t.Fatalf("multicast crossed the router:\n%s", far.Output())
	}
	// The client (subnet 1) reaches subnet 2 through the router.
	start(t, h3, "http", "^listening", "http-server", h3.Addr()+":8080")
	body := get(t, c, "http://"+h3.Addr()+":8080/x")
	if want := "you are 10.77.1.253:"; !strings.Contains(body, want) {
		t.Errorf("GET from the client to h3 = %q, want it to contain %q", body, want)
	}
}

func get(t *testing.T, c *netns.Cluster, url string) string {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %q %v", url, resp.Status, b, err)
	}
	return string(b)
}

func TestClientHTTP(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 2})
	h1, h2 := c.Host(1), c.Host(2)
	start(t, h1, "http", "^listening", "http-server", h1.Addr()+":8080")
	body := get(t, c, "http://"+h1.Addr()+":8080/status")
	if want := "GET /status from pid"; !strings.Contains(body, want) || !strings.Contains(body, "you are 10.77.1.253:") {
		t.Errorf("GET = %q, want %q from the client's address", body, want)
	}
	resp, err := c.Post("http://"+h1.Addr()+":8080/post", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasPrefix(string(b), "POST /post") {
		t.Errorf("POST = %q", b)
	}

	// A server run by the test process itself, listening inside h2.
	l, err := h2.Listen("tcp", h2.Addr()+":9000")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "in-process; you are %s", r.RemoteAddr)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	if body := get(t, c, "http://"+h2.Addr()+":9000/"); !strings.HasPrefix(body, "in-process; you are 10.77.1.253:") {
		t.Errorf("GET in-process server = %q", body)
	}
	resp, err = h1.HTTPClient().Get("http://" + h2.Addr() + ":9000/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasPrefix(string(b), "in-process; you are 10.77.1.1:") {
		t.Errorf("GET from h1's client = %q", b)
	}

	// Host names are refused: resolving could leave the namespace.
	if _, err := c.Client().DialContext(t.Context(), "tcp", "localhost:8080"); err == nil {
		t.Error("DialContext accepted a host name")
	}
	// The dialer's thread went back: the test process's own namespace has
	// no 10.77 address.
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if strings.HasPrefix(a.String(), "10.77.") {
			t.Errorf("the test process's namespace has %s", a)
		}
	}
}

func TestProcLifecycle(t *testing.T) {
	// Long enough for a polite process to exit on a loaded machine (or
	// under -race), short enough to wait out for a stubborn one.
	const grace = 2 * time.Second
	c := netns.New(t, netns.Options{Hosts: 1, StopGrace: grace})
	h := c.Host(1)

	polite := start(t, h, "polite", "^sleeping", "sleep")
	polite.Stop()
	if err := polite.Wait(); err != nil || !strings.Contains(polite.Output(), "got SIGTERM") {
		t.Errorf("Stop of a process that exits on SIGTERM: %v\n%s", err, polite.Output())
	}

	stubborn := start(t, h, "stubborn", "^sleeping", "sleep", "ignore-term")
	began := time.Now()
	stubborn.Stop()
	if took := time.Since(began); took < grace {
		t.Errorf("Stop killed a SIGTERM-ignoring process after %v, before the grace", took)
	}
	if !killed(stubborn.Wait()) || !strings.Contains(stubborn.Output(), "ignoring SIGTERM") {
		t.Errorf("Stop of a SIGTERM-ignoring process: %v\n%s", stubborn.Wait(), stubborn.Output())
	}

	victim := start(t, h, "victim", "^sleeping", "sleep", "ignore-term")
	victim.Kill()
	if !killed(victim.Wait()) || victim.Running() {
		t.Errorf("Kill: %v", victim.Wait())
	}
	// Waiting on the log of an exited process ends at once.
	_, err := victim.WaitLog("never printed", time.Minute)
	var lt *netns.LogTimeoutError
	if !errors.As(err, &lt) || !lt.Exited {
		t.Errorf("WaitLog on an exited process: %v", err)
	}

	server := start(t, h, "echo", "^listening", "echo-server", h.Addr()+":7000")
	again := server.Restart()
	if server.Running() || again.Pid() == server.Pid() {
		t.Fatalf("Restart: old running %v, pids %d -> %d", server.Running(), server.Pid(), again.Pid())
	}
	if _, err := again.WaitLog("^listening", wait); err != nil {
		t.Fatal(err)
	}
	if err := dial(t, c.Client(), h.Addr()+":7000"); err != nil {
		t.Errorf("client -> restarted server: %v", err)
	}

	// KillAll also reaches a child that left its parent's process group.
	parent := start(t, h, "parent", "^sleeping", "spawn-orphan")
	m, err := parent.WaitLog(`^child pid (\d+)$`, wait)
	if err != nil {
		t.Fatal(err)
	}
	child, _ := strconv.Atoi(m[1])
	h.KillAll()
	if parent.Running() {
		t.Error("KillAll left the parent running")
	}
	deadline := time.Now().Add(wait)
	for {
		pids, err := h.Pids()
		if err != nil {
			t.Fatal(err)
		}
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after KillAll, h1 still runs %v (the orphan was %d)", pids, child)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func killed(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

func listNS(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil {
		t.Fatalf("ip netns list: %v: %s", err, out)
	}
	var names []string
	for line := range strings.Lines(string(out)) {
		if f := strings.Fields(line); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	return names
}

func TestCleanupRemovesEverything(t *testing.T) {
	var made []string
	var pid int
	ok := t.Run("cluster", func(t *testing.T) {
		c := netns.New(t, netns.Options{Hosts: 2, Subnets: 2, Prefix: "sktclean"})
		made = c.Namespaces()
		if len(made) != 5 { // switch, router, h1, h2, client
			t.Fatalf("namespaces %v, want 5", made)
		}
		for _, ns := range made {
			if !slices.Contains(listNS(t), ns) {
				t.Fatalf("%s is not in ip netns list", ns)
			}
		}
		pid = start(t, c.Host(1), "sleeper", "^sleeping", "sleep", "ignore-term").Pid()
	})
	if !ok {
		return
	}
	if len(made) == 0 {
		t.Skip("the cluster subtest was skipped")
	}
	for _, ns := range listNS(t) {
		if strings.HasPrefix(ns, "sktclean-") {
			t.Errorf("namespace %s survived cleanup", ns)
		}
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("process %d survived cleanup", pid)
	}
}

func TestNewRemovesStale(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	// A pid that no longer runs: a process we started and reaped.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	// A run killed a moment ago: a zombie not yet reaped by its parent.
	zombie := exec.Command("sleep", "60")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { zombie.Wait() })
	zombie.Process.Kill()
	for deadline := time.Now().Add(wait); ; {
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", zombie.Process.Pid))
		if strings.Contains(string(stat), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed sleep is not a zombie: %q", stat)
		}
		time.Sleep(10 * time.Millisecond)
	}
	stale := fmt.Sprintf("sktstale-%d-1-h1", dead.Process.Pid)
	ofZombie := fmt.Sprintf("sktstale-%d-1-h1", zombie.Process.Pid)
	live := fmt.Sprintf("sktstale-%d-999-h1", os.Getpid())
	for _, ns := range []string{stale, ofZombie, live} {
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			t.Skipf("ip netns add: %v: %s", err, out)
		}
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	}
	// What a killed run leaves: a process still inside its namespace.
	argv, env := helper(t, "sleep", "ignore-term")
	leftover := exec.Command("ip", append([]string{"netns", "exec", stale}, argv...)...)
	leftover.Env = append(os.Environ(), env...)
	out, err := leftover.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := leftover.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() {
		leftover.Process.Kill()
		<-exited
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	go func() { exited <- leftover.Wait() }()
	if err != nil || !strings.HasPrefix(line, "sleeping") {
		t.Fatalf("leftover process: %q %v", line, err)
	}

	netns.New(t, netns.Options{Hosts: 1, Prefix: "sktstale"})
	names := listNS(t)
	for _, ns := range []string{stale, ofZombie} {
		if slices.Contains(names, ns) {
			t.Errorf("New left the stale namespace %s", ns)
		}
	}
	if !slices.Contains(names, live) {
		t.Errorf("New removed %s, whose run (this one) is alive", live)
	}
	select {
	case err := <-exited:
		exited <- err // for the cleanup
		if !killed(err) {
			t.Errorf("the leftover process ended with %v, want SIGKILL", err)
		}
	case <-time.After(wait):
		t.Error("the process in the stale namespace still runs")
	}
}

func TestExecReportsFailure(t *testing.T) {
	c := netns.New(t, netns.Options{Hosts: 1})
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	_, err := c.Host(1).Exec(ctx, "/nonexistent/binary")
	var ce *netns.CmdError
	if !errors.As(err, &ce) || len(ce.Args) < 5 || ce.Args[4] != "/nonexistent/binary" {
		t.Errorf("Exec of a missing binary: %v, want a *CmdError naming it", err)
	}
}
