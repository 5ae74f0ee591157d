//go:build linux

package netns_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary doubles as the small servers and clients that the tests
// run inside the namespaces: with helperEnv set, TestMain runs the helper
// named by its first argument instead of the tests.
const helperEnv = "NETNS_TEST_HELPER=1"

func TestMain(m *testing.M) {
	if os.Getenv("NETNS_TEST_HELPER") == "1" {
		os.Exit(helperMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// helper returns the argv that runs a helper, and the environment it needs.
func helper(t testing.TB, args ...string) ([]string, []string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{exe}, args...), []string{helperEnv}
}

func helperMain(args []string) int {
	if len(args) == 0 {
		fmt.Println("helper: no mode")
		return 2
	}
	var err error
	switch mode, a := args[0], args[1:]; mode {
	case "echo-server":
		err = echoServer(a[0])
	case "echo-client":
		err = echoClient(a[0])
	case "dial-once":
		err = dialOnce(a[0])
	case "http-server":
		err = httpServer(a[0])
	case "mcast-recv":
		err = mcastRecv(a[0])
	case "mcast-send":
		err = udpSend(a[0], "mcast", 5)
	case "udp-send":
		err = udpSend(a[0], a[1], 1)
	case "sleep":
		err = sleeper(len(a) > 0 && a[0] == "ignore-term")
	case "spawn-orphan":
		err = spawnOrphan()
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		fmt.Println("helper error:", err)
		return 1
	}
	return 0
}

// echoServer echoes every line back on every connection.
func echoServer(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Printf("listening %s pid %d\n", l.Addr(), os.Getpid())
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			sc := bufio.NewScanner(c)
			for sc.Scan() {
				if _, err := fmt.Fprintln(c, sc.Text()); err != nil {
					return
				}
			}
		}()
	}
}

// echoClient holds one connection to an echo server, sends "seq N" every
// 100ms and prints "echo seq N" for each line that comes back.
func echoClient(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	fmt.Printf("connected %s -> %s\n", c.LocalAddr(), c.RemoteAddr())
	errc := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(c)
		for sc.Scan() {
			fmt.Println("echo", sc.Text())
		}
		errc <- fmt.Errorf("connection ended: %v", sc.Err())
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case err := <-errc:
			return err
		case <-tick.C:
		}
		if _, err := fmt.Fprintf(c, "seq %d\n", n); err != nil {
			return err
		}
	}
}

// dialOnce connects within a second, sends one line and waits a second for
// the echo.
func dialOnce(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := fmt.Fprintln(c, "hello"); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	fmt.Printf("ok %s", line)
	return nil
}

// httpServer answers every request with who it is and who asked.
func httpServer(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Printf("listening %s\n", l.Addr())
	return http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s from pid %d to %s; you are %s\n", r.Method, r.URL.Path, os.Getpid(), addr, r.RemoteAddr)
	}))
}

// mcastRecv binds 0.0.0.0:port (so unicast to the port arrives too), joins
// the group on the interface the multicast route picks, and prints every
// datagram.
func mcastRecv(group string) error {
	g, err := netip.ParseAddrPort(group)
	if err != nil {
		return err
	}
	pc, err := net.ListenPacket("udp4", fmt.Sprintf("0.0.0.0:%d", g.Port()))
	if err != nil {
		return err
	}
	raw, err := pc.(*net.UDPConn).SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptIPMreq(int(fd), unix.IPPROTO_IP, unix.IP_ADD_MEMBERSHIP, &unix.IPMreq{Multiaddr: g.Addr().As4()})
	})
	if err != nil || serr != nil {
		return fmt.Errorf("join %s: %v %v", g.Addr(), err, serr)
	}
	fmt.Println("ready")
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return err
		}
		fmt.Printf("got %s from %s\n", buf[:n], from)
	}
}

// udpSend sends count datagrams "payload-i" to addr, 50ms apart.
func udpSend(addr, payload string, count int) error {
	c, err := net.Dial("udp4", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	for i := range count {
		if _, err := fmt.Fprintf(c, "%s-%d", payload, i); err != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Println("sent", count)
	return nil
}

// sleeper waits for SIGTERM and exits 0 on it, or ignores it.
func sleeper(ignoreTerm bool) error {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	fmt.Printf("sleeping pid %d\n", os.Getpid())
	for range sig {
		if !ignoreTerm {
			fmt.Println("got SIGTERM")
			return nil
		}
		fmt.Println("ignoring SIGTERM")
	}
	return nil
}

// spawnOrphan starts a sleeper in a process group of its own (as the worker
// does with runners), prints its pid and sleeps.
func spawnOrphan() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	child := exec.Command(exe, "sleep", "ignore-term")
	child.Env = os.Environ()
	child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := child.Start(); err != nil {
		return err
	}
	fmt.Println("child pid " + strconv.Itoa(child.Process.Pid))
	return sleeper(true)
}
