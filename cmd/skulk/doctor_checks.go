package main

import (
	"fmt"
	"io/fs"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/skulk/skulk/internal/platform/config"
)

// The checks of `skulk doctor` are pure functions of the facts doctor
// gathers (doctor_gather.go): each finding says what it saw and, when it
// is not ok, what to do.

// Check statuses.
const (
	statusOK   = "ok"
	statusWarn = "warn"
	statusFail = "fail"
)

// check is one finding of `skulk doctor`.
type check struct {
	Name   string `json:"name"`
	Status string `json:"status"` // ok, warn or fail
	Detail string `json:"detail"`
	Fix    string `json:"fix"`
}

// Bounds the checks judge by.
const (
	lowMemoryBytes = 1 << 30         // available memory under this is a warning
	maxClockSkew   = 5 * time.Second // the HTTP Date header has 1 s resolution
	staleRefusal   = 15 * time.Minute
)

// doctorFacts is what doctor saw of the node and its network.
type doctorFacts struct {
	Now  time.Time
	Home string

	History historyFacts
	CPU     cpuFacts
	Memory  memoryFacts
	Disk    diskFacts
	API     apiFacts
	Ports   []portFacts
	Key     keyFacts
	// Refused and Peers come from the node's diagnostics (API.Answered).
	Refused []refusalFacts
	Peers   []peerFacts
	// Foreign are members gossiping with the cluster whose logs belong
	// to another cluster.
	Foreign []foreignFacts
	Hub     hubFacts
	MDNS    mdnsFacts
}

type foreignFacts struct {
	Node, Cluster, Gossip string
}

type historyFacts struct {
	Dir   string
	Err   string // the log could not be read
	Lost  bool
	After uint64
	Cause string
	Saved string // path of the damaged file kept aside
}

type cpuFacts struct {
	Arch     string
	Cores    int
	Features string // "avx2 fma …", "none"
	SIMD     bool   // AVX2+FMA or NEON: the fast kernels exist for this CPU
	Cap      string // SKULK_KERNELS
	Kernels  string // the set the engine picks; "" when the cap is unknown
	CapErr   string
	Packed   string // the weight types packed at load ("Q8_0, Q4_0, MXFP4"); "" for none
	NoPack   bool   // SKULK_PACK=off
}

type memoryFacts struct {
	Err                   string
	TotalBytes, Available int64
	BudgetBytes           int64 // --memory-budget / SKULK_MEMORY_BUDGET; 0: unset
}

type diskFacts struct {
	Dir             string
	Err             string
	Free, Total     uint64
	FloorSetting    int64 // SKULK_LOG_FREE_FLOOR: 0 default, config.LogFreeFloorOff off
	DefaultFloorFor func(total uint64) uint64
}

type apiFacts struct {
	Host     string
	Answered bool   // an HTTP answer came
	Status   int    // its status
	Err      string // why none came, or the refusal
	NodeID   string
	Version  string
	Role     string
}

// portFacts is one of the node's own ports, tried by binding it.
type portFacts struct {
	Name    string // gossip, QUIC
	Addr    string
	Proto   string // tcp+udp, udp
	InUse   bool
	BindErr string // another failure to bind
}

type keyFacts struct {
	FromEnv bool
	Open    bool // --open-cluster
	Path    string
	Exists  bool
	Mode    fs.FileMode
	Empty   bool
	ReadErr string
	Version string // SKULK_NETWORK_VERSION when set
}

type refusalFacts struct {
	Addr   string
	Reason string
	At     time.Time
}

// peerFacts is one other node the node knows, as the node sees it and as
// doctor reached it from here.
type peerFacts struct {
	ID        string
	Reachable bool // the node counts it a live member (gossip and QUIC reach it)
	Gossip    string
	GossipErr string // "" when a TCP dial of the gossip port succeeded
	API       string // the API address tried
	APIErr    string
	QUIC      string
	Skew      time.Duration // the peer's clock minus ours (API Date header)
	SkewKnown bool
}

type hubFacts struct {
	Offline  bool
	Endpoint string
	Status   int
	Err      string
}

type mdnsFacts struct {
	Disabled bool
	Ifaces   []string // up, multicast, not loopback
	Err      string
}

// doctorChecks judges the facts.
func doctorChecks(f doctorFacts) []check {
	var out []check
	out = append(out, historyCheck(f.History), cpuCheck(f.CPU), memoryCheck(f.Memory), diskCheck(f.Disk), apiCheck(f.API))
	for _, p := range f.Ports {
		out = append(out, portCheck(p, f.API))
	}
	out = append(out, keyCheck(f.Key))
	if f.API.Answered && f.API.Status == 200 {
		out = append(out, refusalChecks(f.Refused, f.Now)...)
		refusedHosts := map[string]bool{}
		for _, r := range f.Refused {
			if refusedForKey(r.Reason) {
				refusedHosts[hostOnly(r.Addr)] = true
			}
		}
		out = append(out, peerChecks(f.Peers, refusedHosts)...)
		out = append(out, foreignChecks(f.Foreign)...)
		if c, ok := clockCheck(f.Peers); ok {
			out = append(out, c)
		}
	}
	out = append(out, hubCheck(f.Hub), mdnsCheck(f.MDNS))
	return out
}

// failed reports whether any check failed.
func failed(checks []check) bool {
	for _, c := range checks {
		if c.Status == statusFail {
			return true
		}
	}
	return false
}

func historyCheck(h historyFacts) check {
	c := check{Name: "history", Status: statusOK, Detail: "the event log in " + h.Dir + " lost no history"}
	switch {
	case h.Err != "":
		c.Status, c.Detail = statusFail, "cannot read the event log in "+h.Dir+": "+h.Err
		c.Fix = "check the home's permissions and disk (--home, SKULK_HOME)"
	case h.Lost:
		c.Status = statusFail
		c.Detail = fmt.Sprintf("the event log in %s lost history after index %d: %s", h.Dir, h.After, h.Cause)
		if h.Saved != "" {
			c.Detail += "; the damaged file is kept as " + h.Saved
		}
		c.Fix = "in a cluster the node takes the history back from the master when it follows one; to go on without it: skulk doctor --ack-log-loss"
	}
	return c
}

func cpuCheck(p cpuFacts) check {
	c := check{Name: "cpu", Status: statusOK}
	c.Detail = fmt.Sprintf("%s, %d logical CPUs, features: %s; kernel set: %s", p.Arch, p.Cores, p.Features, p.Kernels)
	switch {
	case p.NoPack:
		c.Detail += "; weights kept as stored (SKULK_PACK=off)"
	case p.Packed != "":
		c.Detail += "; " + p.Packed + " weights packed at load"
	}
	switch {
	case p.CapErr != "":
		c.Status, c.Detail = statusFail, fmt.Sprintf("%s, features: %s; SKULK_KERNELS=%q: %s", p.Arch, p.Features, p.Cap, p.CapErr)
		c.Fix = "unset SKULK_KERNELS (the engine then picks the best set for the CPU), or set generic, avx2 or neon"
	case p.Cap != "":
		c.Status = statusWarn
		c.Detail += fmt.Sprintf(" (capped by SKULK_KERNELS=%s)", p.Cap)
		c.Fix = "SKULK_KERNELS is for testing: unset it for the fastest kernels this CPU has"
	case !p.SIMD:
		c.Status = statusWarn
		c.Detail += " (no AVX2+FMA or NEON: the portable Go kernels run, several times slower)"
		c.Fix = "run models on machines with AVX2 (x86-64) or NEON (arm64); on a VM, pass the host CPU's features through (e.g. -cpu host)"
	}
	return c
}

func memoryCheck(m memoryFacts) check {
	c := check{Name: "memory", Status: statusOK}
	if m.Err != "" {
		c.Status, c.Detail = statusWarn, "cannot read the machine's memory: "+m.Err
		c.Fix = "placement counts on the memory the node reports: set --memory-budget (SKULK_MEMORY_BUDGET)"
		return c
	}
	c.Detail = fmt.Sprintf("total %s, available %s", bytesStr(m.TotalBytes), bytesStr(m.Available))
	if m.BudgetBytes > 0 {
		c.Detail += ", budget " + bytesStr(m.BudgetBytes) + " (--memory-budget)"
	}
	switch {
	case m.BudgetBytes > 0 && m.TotalBytes > 0 && m.BudgetBytes > m.TotalBytes:
		c.Status = statusWarn
		c.Detail += ": the budget is more than the machine has"
		c.Fix = "set --memory-budget (SKULK_MEMORY_BUDGET) under the machine's total, or unset it"
	case m.Available < lowMemoryBytes:
		c.Status = statusWarn
		c.Detail += ": little memory is free for models"
		c.Fix = "stop what else uses memory on this machine, or place models on other nodes"
	}
	return c
}

func diskCheck(d diskFacts) check {
	c := check{Name: "disk", Status: statusOK}
	if d.Err != "" {
		c.Status, c.Detail = statusWarn, "cannot read the free space under "+d.Dir+": "+d.Err
		c.Fix = "check the home exists and is readable (--home, SKULK_HOME)"
		return c
	}
	var floor uint64
	switch {
	case d.FloorSetting == config.LogFreeFloorOff:
		c.Detail = fmt.Sprintf("%s free of %s under %s (the event log's free-space floor is off: SKULK_LOG_FREE_FLOOR=0)", bytesStr(int64(d.Free)), bytesStr(int64(d.Total)), d.Dir)
		return c
	case d.FloorSetting > 0:
		floor = uint64(d.FloorSetting)
	case d.DefaultFloorFor != nil:
		floor = d.DefaultFloorFor(d.Total)
	}
	c.Detail = fmt.Sprintf("%s free of %s under %s; the event log stops writing under %s free", bytesStr(int64(d.Free)), bytesStr(int64(d.Total)), d.Dir, bytesStr(int64(floor)))
	switch {
	case d.Free < floor:
		c.Status = statusFail
		c.Detail += ": it has stopped (the node's persistence is degraded)"
		c.Fix = "free space on the disk of " + d.Dir + " (old models: skulk rm MODEL); the node writes again by itself within seconds"
	case d.Free < 2*floor:
		c.Status = statusWarn
		c.Detail += ": close to it"
		c.Fix = "free space on the disk of " + d.Dir + " (old models: skulk rm MODEL)"
	}
	return c
}

func apiCheck(a apiFacts) check {
	c := check{Name: "api", Status: statusOK}
	switch {
	case !a.Answered:
		c.Status = statusWarn
		c.Detail = "no node answers at " + a.Host + ": " + a.Err
		c.Fix = "start the node (skulk run), or name its API with --host (SKULK_HOST); the cluster checks need it"
	case a.Status == 401 || a.Status == 403:
		c.Status = statusWarn
		c.Detail = fmt.Sprintf("the node at %s answers but refuses doctor (HTTP %d): %s", a.Host, a.Status, a.Err)
		c.Fix = "set SKULK_API_KEY to the cluster's admin or an inference key, or save it in the --api-key-file (mode 0600); the cluster checks need it"
	case a.Status != 200:
		c.Status = statusWarn
		c.Detail = fmt.Sprintf("the node at %s answers HTTP %d: %s", a.Host, a.Status, a.Err)
		c.Fix = "check the node's log"
	default:
		c.Detail = fmt.Sprintf("node %s answers at %s (%s, version %s)", a.NodeID, a.Host, a.Role, a.Version)
	}
	return c
}

func portCheck(p portFacts, a apiFacts) check {
	c := check{Name: p.Name + " port", Status: statusOK}
	port := portOf(p.Addr)
	up := a.Answered
	switch {
	case p.BindErr != "":
		c.Status = statusWarn
		c.Detail = fmt.Sprintf("cannot try %s (%s) on %s: %s", p.Name, p.Proto, p.Addr, p.BindErr)
		c.Fix = fmt.Sprintf("run doctor as the node's user; check %s is an address of this machine", p.Addr)
	case p.InUse && up:
		c.Detail = fmt.Sprintf("%s %s (%s) is bound: the node holds it", p.Name, p.Addr, p.Proto)
	case p.InUse:
		c.Status = statusWarn
		c.Detail = fmt.Sprintf("%s %s (%s) is in use, but no node answers at %s: another program holds it, or a node whose API is elsewhere", p.Name, p.Addr, p.Proto, a.Host)
		c.Fix = fmt.Sprintf("see who holds it: ss -lntup | grep %s; name the node's API with --host, or give the node another port (--%s-addr)", port, strings.ToLower(p.Name))
	case up:
		c.Status = statusWarn
		c.Detail = fmt.Sprintf("%s %s (%s) is free, though the node answers: it listens elsewhere", p.Name, p.Addr, p.Proto)
		c.Fix = "check the node's --" + strings.ToLower(p.Name) + "-addr"
	default:
		c.Detail = fmt.Sprintf("%s %s (%s) is free: no node runs here", p.Name, p.Addr, p.Proto)
	}
	return c
}

func keyCheck(k keyFacts) check {
	c := check{Name: "cluster key", Status: statusOK}
	join := "skulk cluster invite on a member prints the line; then skulk run --join INVITE here"
	switch {
	case k.Open:
		c.Status, c.Detail = statusWarn, "--open-cluster: the public key derived from the network version admits any host that reaches the gossip port"
		c.Fix = "drop --open-cluster; the first node then generates a secret key and prints its invite"
	case k.FromEnv:
		c.Detail = "from SKULK_CLUSTER_KEY (the environment overrides " + k.Path + ")"
	case k.ReadErr != "":
		c.Status, c.Detail = statusFail, "cannot read "+k.Path+": "+k.ReadErr
		c.Fix = "make it readable by the node's user (mode 0600), or rejoin: " + join
	case !k.Exists:
		c.Status, c.Detail = statusWarn, "no cluster key in "+k.Path+" or SKULK_CLUSTER_KEY: the next skulk run generates one and starts a new cluster"
		c.Fix = "to join an existing cluster instead: " + join
	case k.Empty:
		c.Status, c.Detail = statusFail, k.Path+" is empty"
		c.Fix = "delete it to start a new cluster, or rejoin: " + join
	case k.Mode.Perm()&0o077 != 0:
		c.Status, c.Detail = statusWarn, fmt.Sprintf("%s has mode %04o: other users can read the cluster's secret", k.Path, k.Mode.Perm())
		c.Fix = "chmod 600 " + k.Path + " (the node also tightens it at its next start)"
	default:
		c.Detail = fmt.Sprintf("%s (mode %04o)", k.Path, k.Mode.Perm())
	}
	if k.Version != "" {
		c.Detail += "; network version " + k.Version + " (SKULK_NETWORK_VERSION): nodes of another version refuse this one"
		if c.Status == statusOK {
			c.Status = statusWarn
			c.Fix = "unset SKULK_NETWORK_VERSION unless you are staging an upgrade"
		}
	}
	return c
}

// refusedForKey reports whether a refusal means another cluster key or
// network version (gossip that could not be decrypted, a QUIC handshake
// that failed authentication).
func refusedForKey(reason string) bool {
	r := strings.ToLower(reason)
	return strings.Contains(r, "could not be decrypted") || strings.Contains(r, "cluster key") || strings.Contains(r, "network version")
}

func refusalChecks(refused []refusalFacts, now time.Time) []check {
	if len(refused) == 0 {
		return []check{{Name: "peer keys", Status: statusOK, Detail: "the node refused no peer: every node that knocked holds this cluster's key and network version"}}
	}
	var out []check
	for _, r := range refused {
		host := hostOnly(r.Addr)
		c := check{Name: "refused " + host, Status: statusWarn}
		ago := now.Sub(r.At).Round(time.Second)
		switch {
		case strings.Contains(r.Reason, "discovered, not a member"):
			c.Detail = fmt.Sprintf("mDNS found %s announcing another cluster (%s ago); the node does not knock on it", r.Addr, ago)
			c.Fix = "if it should be a member: skulk run --join INVITE on that machine (skulk cluster invite here prints INVITE)"
		case refusedForKey(r.Reason):
			c.Status = statusFail
			if ago > staleRefusal {
				c.Status = statusWarn
			}
			c.Detail = fmt.Sprintf("refused: another cluster key or network version: %s knocked %s ago (%s)", r.Addr, ago, r.Reason)
			c.Fix = "on the machine at " + host + ": skulk run --join INVITE (skulk cluster invite here prints INVITE), or the same SKULK_CLUSTER_KEY and skulk version as this node"
		default:
			c.Detail = fmt.Sprintf("refused %s %s ago: %s", r.Addr, ago, r.Reason)
			c.Fix = "check the node's log for the refusal, and the other node's version and key"
		}
		out = append(out, c)
	}
	return out
}

// foreignChecks fails for each member of another cluster that gossips
// with this one: Raft never merges two clusters.
func foreignChecks(foreign []foreignFacts) []check {
	var out []check
	for _, f := range foreign {
		out = append(out, check{Name: "member " + shortID(f.Node), Status: statusFail,
			Detail: fmt.Sprintf("%s (gossip %s) holds the cluster key but its log belongs to cluster %s, not this one: it serves apart, and the two never merge", f.Node, orDefault(f.Gossip, "unknown"), f.Cluster),
			Fix:    "on that machine: stop skulk, move its home aside (it holds the other cluster's log), and start it again to join this cluster"})
	}
	return out
}

// peerChecks judges each peer; refusedHosts are the hosts the node refused
// for another key.
func peerChecks(peers []peerFacts, refusedHosts map[string]bool) []check {
	var out []check
	for _, p := range peers {
		c := check{Name: "peer " + p.ID, Status: statusOK}
		host := hostOnly(p.Gossip)
		open := fmt.Sprintf("open 52416 (tcp+udp), 52417 (udp) and 52415 (tcp) between this machine and %s (firewall, security group), and check the node runs there", host)
		reach := "the node reports it reachable (gossip and QUIC)"
		if !p.Reachable {
			reach = "the node reports it unreachable"
		}
		switch {
		case p.Gossip == "":
			c.Status = statusWarn
			if !p.Reachable {
				c.Status = statusFail
			}
			c.Detail = "node " + p.ID + ": no address known (it was never seen live by this node); " + reach
			c.Fix = "start it, and point it at this cluster: skulk run --join INVITE, or --bootstrap-peers"
		case p.GossipErr != "":
			c.Status = statusFail
			c.Detail = fmt.Sprintf("node %s at %s: gossip port %s/tcp blocked: %s; %s", p.ID, host, portOf(p.Gossip), p.GossipErr, reach)
			if p.API != "" && p.APIErr != "" {
				c.Detail += fmt.Sprintf("; API port %s/tcp blocked too: %s", portOf(p.API), p.APIErr)
			}
			c.Fix = open
		case !p.Reachable && refusedHosts[host]:
			c.Status = statusFail
			c.Detail = fmt.Sprintf("node %s at %s: the node reports it unreachable, and refused gossip from %s: it now runs with another cluster key or network version",
				p.ID, host, host)
			c.Fix = "on the machine at " + host + ": skulk run --join INVITE (skulk cluster invite here prints INVITE)"
		case !p.Reachable:
			c.Status = statusFail
			c.Detail = fmt.Sprintf("node %s at %s: gossip port %s/tcp answers, but %s: gossip %s/udp or QUIC %s/udp is likely blocked, or it runs with another key",
				p.ID, host, portOf(p.Gossip), reach, portOf(p.Gossip), portOf(p.QUIC))
			c.Fix = open
		case p.APIErr != "":
			c.Status = statusWarn
			c.Detail = fmt.Sprintf("node %s at %s: %s, but its API port %s/tcp is blocked from here: %s", p.ID, host, reach, portOf(p.API), p.APIErr)
			c.Fix = fmt.Sprintf("clients on this machine cannot reach its API: open %s/tcp to %s", portOf(p.API), host)
		default:
			c.Detail = fmt.Sprintf("node %s at %s: gossip %s/tcp and API %s/tcp answer; %s", p.ID, host, portOf(p.Gossip), portOf(p.API), reach)
		}
		out = append(out, c)
	}
	return out
}

// clockCheck compares the peers' clocks with this machine's; no check when
// no peer's clock was read.
func clockCheck(peers []peerFacts) (check, bool) {
	c := check{Name: "clock", Status: statusOK}
	var skewed []string
	n := 0
	for _, p := range peers {
		if !p.SkewKnown {
			continue
		}
		n++
		if p.Skew > maxClockSkew || p.Skew < -maxClockSkew {
			skewed = append(skewed, fmt.Sprintf("%s at %s is %s %s", p.ID, hostOnly(p.Gossip), absDur(p.Skew).Round(time.Second), map[bool]string{true: "ahead", false: "behind"}[p.Skew > 0]))
		}
	}
	if n == 0 {
		return c, false
	}
	if len(skewed) > 0 {
		sort.Strings(skewed)
		c.Status = statusWarn
		c.Detail = "clocks differ by more than " + maxClockSkew.String() + ": " + strings.Join(skewed, "; ")
		c.Fix = "run time synchronisation (chrony, systemd-timesyncd, NTP) on every machine: timelines and logs compare times across nodes"
		return c, true
	}
	c.Detail = fmt.Sprintf("the clocks of %d peers agree with this machine's within %s", n, maxClockSkew)
	return c, true
}

func hubCheck(h hubFacts) check {
	c := check{Name: "hub", Status: statusOK}
	switch {
	case h.Offline:
		c.Detail = "offline (SKULK_OFFLINE): the node uses only the models it has"
	case h.Err != "":
		c.Status = statusWarn
		c.Detail = "the Hub at " + h.Endpoint + " is unreachable: " + h.Err
		c.Fix = "models already downloaded still serve; to download, give this machine internet access (proxy: HTTPS_PROXY), or a mirror (HF_ENDPOINT), or copy models and skulk models import"
	case h.Status >= 500:
		c.Status = statusWarn
		c.Detail = fmt.Sprintf("the Hub at %s answers HTTP %d", h.Endpoint, h.Status)
		c.Fix = "try again later, or use a mirror (HF_ENDPOINT)"
	default:
		c.Detail = fmt.Sprintf("the Hub at %s answers (HTTP %d)", h.Endpoint, h.Status)
	}
	return c
}

func mdnsCheck(m mdnsFacts) check {
	c := check{Name: "mdns", Status: statusOK}
	switch {
	case m.Disabled:
		c.Detail = "off (--no-mdns): nodes find each other through --bootstrap-peers or an invite's addresses"
	case m.Err != "":
		c.Status, c.Detail = statusWarn, "cannot list the network interfaces: "+m.Err
		c.Fix = "use --bootstrap-peers HOST:52416 or an invite with addresses"
	case len(m.Ifaces) == 0:
		c.Status, c.Detail = statusWarn, "no interface that is up can multicast: mDNS cannot find peers"
		c.Fix = "use --bootstrap-peers HOST:52416 (or skulk run --join INVITE with an invite that names members), and --no-mdns"
	default:
		c.Detail = "multicast is possible on " + strings.Join(m.Ifaces, ", ") + " (mDNS also needs 5353/udp open between the machines)"
	}
	return c
}

func portOf(addr string) string {
	if _, p, err := net.SplitHostPort(addr); err == nil {
		return p
	}
	return "?"
}

func hostOnly(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// bytesStr shows a size in binary units.
func bytesStr(b int64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	div, exp := int64(unit), 0
	for n := b / unit; n >= unit; n /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(b)/float64(div), "KMGTPE"[exp])
}
