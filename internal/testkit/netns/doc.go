//go:build linux

// Package netns is a multi-host test harness: it builds a small network out of
// Linux network namespaces, runs real processes on its hosts, and cuts and
// heals the links between them.
//
// New makes one namespace per host, each with a veth into a bridge that lives
// in a private "switch" namespace (never in the machine's root namespace, so
// nothing reaches the real network). With Options.Subnets == 2 the hosts are
// split over two bridges joined by a router namespace that forwards unicast
// but not multicast, so mDNS does not cross and nodes need bootstrap peers.
// An extra client host, which is never partitioned, lets the test process
// reach every host: Host.DialContext and Host.HTTPClient create their sockets
// inside a host's namespace from a locked OS thread, and Cluster.Get/Post use
// the client host.
//
// Addresses: host hN (N counts from 1 over the whole cluster) is 10.77.S.N/24
// on subnet S; the client is 10.77.1.253 and the router is 10.77.S.254.
// Partitions are iptables DROP rules on INPUT in the receiving hosts'
// namespaces, so processes keep running, their sockets stay open and sends
// still succeed: packets just vanish, as on a cut cable. IPv6 is disabled in
// every namespace so that no traffic escapes the IPv4 rules.
//
// A typical test (skulk is a binary the test built; the harness runs any
// command):
//
//	c := netns.New(t, netns.Options{Hosts: 3, Partitions: true})
//	var nodes []*netns.Proc
//	for _, h := range c.Hosts() {
//		p := h.Start("skulk", []string{skulk, "run", "--api-addr", h.Addr() + ":52415", "--home", t.TempDir()}, nil)
//		if _, err := p.WaitLog(`api listening`, 30*time.Second); err != nil {
//			t.Fatal(err)
//		}
//		nodes = append(nodes, p)
//	}
//	c.Host(3).Partition()                       // h3 is cut off; its process runs on
//	resp, err := c.Get("http://" + c.Host(1).Addr() + ":52415/v1/models")
//	...
//	c.Host(3).Heal()
//	nodes[0].Kill()                             // SIGKILL h1's process group
//	nodes[0] = nodes[0].Restart()
//
// Everything New creates (namespaces, veths, bridges, processes) is removed in
// t.Cleanup, even when the test fails; namespaces left by a killed earlier run
// (their names carry the prefix and the pid of the run that made them) are
// removed by the next New with the same prefix.
//
// It needs root, iproute2 (`ip`) and, for partitions, iptables; New skips the
// test, saying why, when it is not root or `ip netns` does not work, and,
// for a test that declares Options.Partitions, when iptables-restore is not
// installed.
//
// Concurrency: Cluster, Host and Proc methods may be called from any
// goroutine, except that methods that fail the test (New, Start, Partition,
// Heal, PartitionGroups, Restart) must be called from the test's goroutine.
//
// This is test-only infrastructure: only _test.go files may import it.
package netns
