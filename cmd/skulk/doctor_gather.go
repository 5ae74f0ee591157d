package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/skulk/skulk/internal/control/eventlog"
	"github.com/skulk/skulk/internal/engine/tensor"
	"github.com/skulk/skulk/internal/models/hub"
	"github.com/skulk/skulk/internal/observe/telemetry"
	"github.com/skulk/skulk/internal/platform/config"
	"github.com/skulk/skulk/internal/platform/homedir"
	"github.com/skulk/skulk/internal/platform/vfs"
	"github.com/skulk/skulk/internal/serving/diagnostics"
)

// doctorOptions are what `skulk doctor` gathers with.
type doctorOptions struct {
	cfg    config.Node
	host   string // the node's API, resolved
	apiKey string
	// dialTimeout bounds each probe of a peer's port; hubTimeout the Hub's.
	dialTimeout, hubTimeout time.Duration
}

// gatherFacts looks at the node, its home and its network. The probes of
// the API, the peers and the Hub run within their timeouts, concurrently
// where they can.
func gatherFacts(ctx context.Context, o doctorOptions) doctorFacts {
	f := doctorFacts{Now: time.Now(), Home: o.cfg.Home}
	var wg sync.WaitGroup
	wg.Go(func() { f.Hub = gatherHub(ctx, o) })
	f.History = gatherHistory(o.cfg.Home)
	f.CPU = gatherCPU(o.cfg.Engine.Kernels, o.cfg.Engine.NoPack)
	f.Memory = gatherMemory(o.cfg.MemoryBudget)
	f.Disk = gatherDisk(o.cfg.Home, o.cfg.LogFreeFloor)
	f.Key = gatherKey(o.cfg)
	f.MDNS = gatherMDNS(o.cfg.NoMDNS)

	var cl *diagnostics.ClusterDiagnostics
	f.API, cl = gatherAPI(ctx, o)
	gossip, quic := o.cfg.GossipAddr, o.cfg.QUICAddr
	if cl != nil {
		for _, r := range cl.Refused {
			f.Refused = append(f.Refused, refusalFacts{Addr: r.Addr, Reason: r.Reason, At: r.At})
		}
		for _, m := range cl.Consensus.Foreign {
			f.Foreign = append(f.Foreign, foreignFacts{Node: string(m.Node), Cluster: m.Cluster, Gossip: m.Gossip})
		}
		var peers []diagnostics.NodeDiagnostics
		for _, n := range cl.Nodes {
			if string(n.NodeID) == f.API.NodeID {
				// The node's own ports, where it says it gossips.
				if n.Gossip != "" {
					gossip = n.Gossip
				}
				if len(n.QUIC) > 0 {
					quic = n.QUIC[0]
				}
				continue
			}
			peers = append(peers, n)
		}
		f.Peers = make([]peerFacts, len(peers))
		for i, n := range peers {
			wg.Go(func() { f.Peers[i] = probePeer(ctx, o, n) })
		}
	}
	f.Ports = []portFacts{tryBind("gossip", gossip, "tcp", "udp"), tryBind("QUIC", quic, "udp")}
	wg.Wait()
	return f
}

func gatherHistory(home string) historyFacts {
	h := historyFacts{Dir: diagnostics.LogDir(home)}
	loss, err := diagnostics.PendingLogLoss(home)
	switch {
	case err != nil:
		h.Err = err.Error()
	case loss != nil:
		h.Lost, h.After = true, loss.After
		if loss.Cause != nil {
			h.Cause = loss.Cause.Error()
		}
		if loss.Saved != "" {
			h.Saved = filepath.Join(h.Dir, loss.Saved)
		}
	}
	return h
}

func gatherCPU(cap string, noPack bool) cpuFacts {
	feat := tensor.CPUFeatures()
	c := cpuFacts{Arch: runtime.GOOS + "/" + runtime.GOARCH, Cores: runtime.NumCPU(), Features: feat.String(), Cap: cap,
		SIMD: (feat.AVX2 && feat.FMA) || feat.NEON, NoPack: noPack}
	if k, err := tensor.Capped(cap); err != nil {
		c.CapErr = err.Error()
	} else {
		c.Kernels = k.Name()
		var packed []string
		for _, t := range []tensor.Type{tensor.Q8_0, tensor.Q4_0, tensor.MXFP4} {
			if k.PackRows(t) > 0 {
				packed = append(packed, t.String())
			}
		}
		c.Packed = strings.Join(packed, ", ")
	}
	return c
}

func gatherMemory(budget int64) memoryFacts {
	m := memoryFacts{BudgetBytes: budget}
	r, err := telemetry.ReadMemory()
	if err != nil {
		m.Err = err.Error()
		return m
	}
	m.TotalBytes, m.Available = r.TotalBytes, r.AvailableBytes
	return m
}

func gatherDisk(home string, floor int64) diskFacts {
	// The home may not exist yet: its nearest existing parent is on the
	// disk it will be made on.
	dir := home
	for {
		if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
			break
		}
		dir = filepath.Dir(dir)
	}
	d := diskFacts{Dir: dir, FloorSetting: floor, DefaultFloorFor: eventlog.FloorFor}
	var err error
	if d.Free, err = (vfs.OS{}).FreeBytes(dir); err != nil {
		d.Err = err.Error()
	} else if d.Total, err = (vfs.OS{}).TotalBytes(dir); err != nil {
		d.Err = err.Error()
	}
	return d
}

func gatherKey(cfg config.Node) keyFacts {
	k := keyFacts{FromEnv: cfg.ClusterKey != "", Open: cfg.OpenCluster, Path: filepath.Join(cfg.Home, homedir.ClusterKeyFile), Version: cfg.NetworkVersion}
	st, err := os.Stat(k.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return k
	case err != nil:
		k.ReadErr = err.Error()
		return k
	}
	k.Exists, k.Mode = true, st.Mode()
	b, err := os.ReadFile(k.Path)
	if err != nil {
		k.ReadErr = err.Error()
		return k
	}
	k.Empty = strings.TrimSpace(string(b)) == ""
	return k
}

func gatherMDNS(disabled bool) mdnsFacts {
	m := mdnsFacts{Disabled: disabled}
	if disabled {
		return m
	}
	ifs, err := net.Interfaces()
	if err != nil {
		m.Err = err.Error()
		return m
	}
	for _, i := range ifs {
		if i.Flags&net.FlagUp != 0 && i.Flags&net.FlagMulticast != 0 && i.Flags&net.FlagLoopback == 0 {
			m.Ifaces = append(m.Ifaces, i.Name)
		}
	}
	return m
}

// gatherAPI asks the node for its facts and its view of the cluster.
func gatherAPI(ctx context.Context, o doctorOptions) (apiFacts, *diagnostics.ClusterDiagnostics) {
	a := apiFacts{Host: o.host}
	base := o.host
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	base = strings.TrimRight(base, "/")
	client := &http.Client{Timeout: 3 * time.Second}
	get := func(path string, v any) (int, error) {
		req, err := http.NewRequestWithContext(ctx, "GET", base+path, nil)
		if err != nil {
			return 0, err
		}
		if o.apiKey != "" {
			req.Header.Set("Authorization", "Bearer "+o.apiKey)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		if resp.StatusCode != 200 {
			var e struct {
				Error struct{ Message string } `json:"error"`
			}
			msg := strings.TrimSpace(string(b))
			if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
				msg = e.Error.Message
			}
			return resp.StatusCode, errors.New(msg)
		}
		return 200, json.Unmarshal(b, v)
	}
	var nd diagnostics.NodeReport
	code, err := get("/v1/diagnostics/node", &nd)
	a.Answered, a.Status = code != 0, code
	if err != nil {
		a.Err = err.Error()
		if code == 200 {
			a.Status = 502 // an answer doctor cannot read
		}
		return a, nil
	}
	a.NodeID, a.Version, a.Role = string(nd.NodeID), nd.Version, nd.Role
	var cl diagnostics.ClusterDiagnostics
	if code, err := get("/v1/diagnostics/cluster", &cl); err != nil {
		a.Status, a.Err = max(code, 502), "cluster diagnostics: "+err.Error()
		return a, nil
	}
	return a, &cl
}

// probePeer dials a peer's gossip and API ports from here and reads its
// clock from its API's Date header.
func probePeer(ctx context.Context, o doctorOptions, n diagnostics.NodeDiagnostics) peerFacts {
	p := peerFacts{ID: string(n.NodeID), Reachable: n.Reachable, Gossip: n.Gossip}
	if len(n.QUIC) > 0 {
		p.QUIC = pickAddr(n.QUIC, n.Gossip)
	}
	if n.Gossip == "" {
		return p
	}
	p.API = pickAddr(n.API, n.Gossip)
	var wg sync.WaitGroup
	wg.Go(func() { p.GossipErr = dialErr(ctx, n.Gossip, o.dialTimeout) })
	if p.API != "" {
		wg.Go(func() {
			if p.APIErr = dialErr(ctx, p.API, o.dialTimeout); p.APIErr == "" {
				p.Skew, p.SkewKnown = peerSkew(ctx, p.API, o.dialTimeout)
			}
		})
	}
	wg.Wait()
	return p
}

// pickAddr picks the address on the same host as the gossip address, else
// the first that is not loopback (a peer's loopback is not reachable from
// here), else the first.
func pickAddr(addrs []string, gossip string) string {
	if len(addrs) == 0 {
		return ""
	}
	host := hostOnly(gossip)
	for _, a := range addrs {
		if hostOnly(a) == host {
			return a
		}
	}
	for _, a := range addrs {
		if ap, err := netip.ParseAddrPort(a); err == nil && !ap.Addr().IsLoopback() {
			return a
		}
	}
	return addrs[0]
}

func dialErr(ctx context.Context, addr string, timeout time.Duration) string {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			return fmt.Sprintf("no answer within %s (packets dropped: a firewall, or the machine is off)", timeout)
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			return "connection refused (nothing listens there: the node is not running, or listens elsewhere)"
		}
		return err.Error()
	}
	c.Close()
	return ""
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// peerSkew reads a peer's clock from its API's Date header (any answer
// carries one, a refusal too) against the middle of the round trip.
func peerSkew(ctx context.Context, api string, timeout time.Duration) (time.Duration, bool) {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+api+"/v1/diagnostics/node", nil)
	if err != nil {
		return 0, false
	}
	t0 := time.Now()
	resp, err := (&http.Client{Timeout: timeout}).Do(req)
	if err != nil {
		return 0, false
	}
	t1 := time.Now()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	date, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		return 0, false
	}
	// Date has whole seconds: add half of one to center its error.
	mid := t0.Add(t1.Sub(t0) / 2)
	return date.Add(500 * time.Millisecond).Sub(mid), true
}

// tryBind binds addr on each network: in use means something (probably
// the node) holds it.
func tryBind(name, addr string, networks ...string) portFacts {
	p := portFacts{Name: name, Addr: addr, Proto: strings.Join(networks, "+")}
	for _, nw := range networks {
		var err error
		switch nw {
		case "tcp":
			var ln net.Listener
			if ln, err = net.Listen("tcp", addr); err == nil {
				ln.Close()
			}
		case "udp":
			var pc net.PacketConn
			if pc, err = net.ListenPacket("udp", addr); err == nil {
				pc.Close()
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, syscall.EADDRINUSE):
			p.InUse = true
			return p
		default:
			p.BindErr = err.Error()
			return p
		}
	}
	return p
}

// gatherHub sends HEAD to the Hub (HF_ENDPOINT, else huggingface.co).
func gatherHub(ctx context.Context, o doctorOptions) hubFacts {
	h := hubFacts{Offline: o.cfg.Offline, Endpoint: o.cfg.HubEndpoint}
	if h.Endpoint == "" {
		h.Endpoint = hub.DefaultEndpoint
	}
	if h.Offline {
		return h
	}
	ctx, cancel := context.WithTimeout(ctx, o.hubTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "HEAD", h.Endpoint, nil)
	if err != nil {
		h.Err = err.Error()
		return h
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			h.Err = fmt.Sprintf("no answer within %s", o.hubTimeout)
		} else {
			var ue interface{ Unwrap() error }
			if errors.As(err, &ue) && ue.Unwrap() != nil {
				err = ue.Unwrap()
			}
			h.Err = err.Error()
		}
		return h
	}
	resp.Body.Close()
	h.Status = resp.StatusCode
	return h
}
