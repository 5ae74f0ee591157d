package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/control/eventlog"
	"github.com/skulk/skulk/internal/platform/config"
)

func TestDoctorPeerChecks(t *testing.T) {
	cases := []struct {
		name   string
		p      peerFacts
		status string
		want   []string
	}{
		{"healthy", peerFacts{ID: "n2", Reachable: true, Gossip: "10.0.0.2:52416", API: "10.0.0.2:52415"}, statusOK,
			[]string{"n2", "10.0.0.2", "reports it reachable"}},
		{"partitioned", peerFacts{ID: "n3", Gossip: "10.0.0.3:52416", GossipErr: "no answer within 2s", API: "10.0.0.3:52415", APIErr: "no answer within 2s"}, statusFail,
			[]string{"node n3 at 10.0.0.3", "gossip port 52416/tcp blocked", "API port 52415/tcp blocked", "unreachable"}},
		{"udp blocked", peerFacts{ID: "n4", Gossip: "10.0.0.4:52416", QUIC: "10.0.0.4:52417", API: "10.0.0.4:52415"}, statusFail,
			[]string{"52416/tcp answers", "52417/udp", "unreachable"}},
		{"api blocked", peerFacts{ID: "n5", Reachable: true, Gossip: "10.0.0.5:52416", API: "10.0.0.5:52415", APIErr: "refused"}, statusWarn,
			[]string{"API port 52415/tcp is blocked"}},
		{"never seen", peerFacts{ID: "n6"}, statusFail, []string{"no address known"}},
	}
	for _, c := range cases {
		got := peerChecks([]peerFacts{c.p}, nil)[0]
		if got.Status != c.status || got.Name != "peer "+c.p.ID {
			t.Errorf("%s: %+v, want status %s", c.name, got, c.status)
		}
		for _, w := range c.want {
			if !strings.Contains(got.Detail, w) {
				t.Errorf("%s: detail %q lacks %q", c.name, got.Detail, w)
			}
		}
		if c.status != statusOK && got.Fix == "" {
			t.Errorf("%s: no fix", c.name)
		}
	}
}

func TestDoctorPeerWithAnotherKey(t *testing.T) {
	p := peerFacts{ID: "n3", Gossip: "10.0.0.3:52416", API: "10.0.0.3:52415"}
	got := peerChecks([]peerFacts{p}, map[string]bool{"10.0.0.3": true})[0]
	if got.Status != statusFail || !strings.Contains(got.Detail, "another cluster key") || !strings.Contains(got.Fix, "--join") {
		t.Fatalf("%+v", got)
	}
}

func TestDoctorRefusals(t *testing.T) {
	now := time.Now()
	got := refusalChecks(nil, now)
	if len(got) != 1 || got[0].Status != statusOK {
		t.Fatalf("no refusals: %+v", got)
	}
	got = refusalChecks([]refusalFacts{
		{Addr: "10.0.0.9:52416", Reason: "gossip could not be decrypted: different cluster key or network version", At: now.Add(-time.Minute)},
		{Addr: "10.0.0.8:5353", Reason: "discovered, not a member: it announces another cluster (join it with `skulk run --join INVITE`)", At: now},
		{Addr: "10.0.0.7:52416", Reason: "gossip could not be decrypted: different cluster key or network version", At: now.Add(-time.Hour)},
	}, now)
	want := []string{statusFail, statusWarn, statusWarn}
	for i, c := range got {
		if c.Status != want[i] {
			t.Errorf("%d: %+v, want %s", i, c, want[i])
		}
	}
	if !strings.Contains(got[0].Detail, "refused: another cluster key or network version") || !strings.Contains(got[0].Fix, "skulk run --join INVITE") ||
		!strings.Contains(got[0].Name, "10.0.0.9") {
		t.Errorf("key refusal: %+v", got[0])
	}
}

func TestDoctorLocalChecks(t *testing.T) {
	gib := int64(1 << 30)
	cases := []struct {
		name string
		c    check
		want string
	}{
		{"disk ok", diskCheck(diskFacts{Dir: "/h", Free: 100 << 30, Total: 200 << 30, DefaultFloorFor: eventlog.FloorFor}), statusOK},
		{"disk close", diskCheck(diskFacts{Dir: "/h", Free: 3 << 30, Total: 200 << 30, DefaultFloorFor: eventlog.FloorFor}), statusWarn},
		{"disk under floor", diskCheck(diskFacts{Dir: "/h", Free: 1 << 30, Total: 200 << 30, DefaultFloorFor: eventlog.FloorFor}), statusFail},
		{"disk small, 5%", diskCheck(diskFacts{Dir: "/h", Free: 400 << 20, Total: 10 << 30, DefaultFloorFor: eventlog.FloorFor}), statusFail},
		{"disk floor set", diskCheck(diskFacts{Dir: "/h", Free: 1 << 30, Total: 200 << 30, FloorSetting: 100 << 20, DefaultFloorFor: eventlog.FloorFor}), statusOK},
		{"disk floor off", diskCheck(diskFacts{Dir: "/h", Free: 1, Total: 200 << 30, FloorSetting: config.LogFreeFloorOff}), statusOK},
		{"memory ok", memoryCheck(memoryFacts{TotalBytes: 16 * gib, Available: 8 * gib}), statusOK},
		{"memory low", memoryCheck(memoryFacts{TotalBytes: 16 * gib, Available: gib / 2}), statusWarn},
		{"budget over total", memoryCheck(memoryFacts{TotalBytes: 16 * gib, Available: 8 * gib, BudgetBytes: 32 * gib}), statusWarn},
		{"cpu best", cpuCheck(cpuFacts{Features: "avx2 fma", SIMD: true, Kernels: "avx2", Packed: "Q8_0, Q4_0, MXFP4"}), statusOK},
		{"cpu unpacked", cpuCheck(cpuFacts{Features: "avx2 fma", SIMD: true, Kernels: "avx2", Packed: "Q8_0", NoPack: true}), statusOK},
		{"cpu no simd", cpuCheck(cpuFacts{Features: "none", Kernels: "generic"}), statusWarn},
		{"cpu bad cap", cpuCheck(cpuFacts{Cap: "sse", CapErr: "unknown"}), statusFail},
		{"key 0600", keyCheck(keyFacts{Path: "/h/cluster-key", Exists: true, Mode: 0o600}), statusOK},
		{"key 0644", keyCheck(keyFacts{Path: "/h/cluster-key", Exists: true, Mode: 0o644}), statusWarn},
		{"key empty", keyCheck(keyFacts{Path: "/h/cluster-key", Exists: true, Mode: 0o600, Empty: true}), statusFail},
		{"key missing", keyCheck(keyFacts{Path: "/h/cluster-key"}), statusWarn},
		{"key env", keyCheck(keyFacts{Path: "/h/cluster-key", FromEnv: true}), statusOK},
		{"key open", keyCheck(keyFacts{Open: true}), statusWarn},
		{"api down", apiCheck(apiFacts{Host: "localhost:52415", Err: "refused"}), statusWarn},
		{"api refuses", apiCheck(apiFacts{Host: "h", Answered: true, Status: 401}), statusWarn},
		{"api ok", apiCheck(apiFacts{Host: "h", Answered: true, Status: 200, NodeID: "n1"}), statusOK},
		{"port node", portCheck(portFacts{Name: "gossip", Addr: "0.0.0.0:52416", InUse: true}, apiFacts{Answered: true}), statusOK},
		{"port other", portCheck(portFacts{Name: "gossip", Addr: "0.0.0.0:52416", InUse: true}, apiFacts{}), statusWarn},
		{"port free, no node", portCheck(portFacts{Name: "QUIC", Addr: "0.0.0.0:52417"}, apiFacts{}), statusOK},
		{"port free, node up", portCheck(portFacts{Name: "QUIC", Addr: "0.0.0.0:52417"}, apiFacts{Answered: true}), statusWarn},
		{"hub offline", hubCheck(hubFacts{Offline: true}), statusOK},
		{"hub unreachable", hubCheck(hubFacts{Endpoint: "https://huggingface.co", Err: "no such host"}), statusWarn},
		{"hub ok", hubCheck(hubFacts{Endpoint: "https://huggingface.co", Status: 200}), statusOK},
		{"mdns none", mdnsCheck(mdnsFacts{}), statusWarn},
		{"mdns eth0", mdnsCheck(mdnsFacts{Ifaces: []string{"eth0"}}), statusOK},
		{"mdns off", mdnsCheck(mdnsFacts{Disabled: true}), statusOK},
		{"history lost", historyCheck(historyFacts{Dir: "/h/log", Lost: true, After: 7}), statusFail},
		{"member of another cluster", foreignChecks([]foreignFacts{{Node: "6c6b29f1-2a6e", Cluster: "ef5a887e", Gossip: "10.0.0.2:52416"}})[0], statusFail},
	}
	for _, c := range cases {
		if c.c.Status != c.want {
			t.Errorf("%s: %+v, want %s", c.name, c.c, c.want)
		}
		if c.c.Status != statusOK && c.c.Fix == "" {
			t.Errorf("%s: no fix", c.name)
		}
	}
}

func TestDoctorClock(t *testing.T) {
	if _, ok := clockCheck([]peerFacts{{ID: "a"}}); ok {
		t.Fatal("a clock check without readings")
	}
	c, _ := clockCheck([]peerFacts{{ID: "a", SkewKnown: true, Skew: time.Second}, {ID: "b", SkewKnown: true, Skew: -2 * time.Second}})
	if c.Status != statusOK {
		t.Fatalf("%+v", c)
	}
	c, _ = clockCheck([]peerFacts{{ID: "a", SkewKnown: true, Skew: time.Second}, {ID: "b", Gossip: "10.0.0.2:52416", SkewKnown: true, Skew: -time.Minute}})
	if c.Status != statusWarn || !strings.Contains(c.Detail, "b at 10.0.0.2 is 1m0s behind") {
		t.Fatalf("%+v", c)
	}
}

// TestDoctorHubProbe points the Hub check at a local server and at a port
// nothing listens on: never the internet.
func TestDoctorHubProbe(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "HEAD" {
			t.Errorf("method %s", r.Method)
		}
	}))
	defer srv.Close()
	o := doctorOptions{hubTimeout: 3 * time.Second}
	o.cfg.HubEndpoint = srv.URL
	if h := gatherHub(context.Background(), o); h.Status != 200 || hubCheck(h).Status != statusOK {
		t.Fatalf("local hub: %+v", h)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	o.cfg.HubEndpoint = "http://" + dead
	h := gatherHub(context.Background(), o)
	if c := hubCheck(h); c.Status != statusWarn || !strings.Contains(c.Detail, "unreachable") {
		t.Fatalf("dead hub: %+v", c)
	}
	o.cfg.Offline = true
	if c := hubCheck(gatherHub(context.Background(), o)); c.Status != statusOK || !strings.Contains(c.Detail, "offline") {
		t.Fatalf("offline: %+v", c)
	}
}

// TestDoctorLiveNode runs `skulk doctor --json` against a node on
// loopback: its API answers, its ports are bound, its key is private.
func TestDoctorLiveNode(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a node")
	}
	home := t.TempDir()
	n := startLiveNode(t, "--home", home)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(skulkBinary(t), "doctor", "--json", "--home", home, "--host", n.host, "--no-mdns")
	cmd.Env = append(os.Environ(), "SKULK_HOST=", "SKULK_API_KEY=", "SKULK_CLUSTER_KEY=", "SKULK_OFFLINE=", "HF_ENDPOINT=http://"+dead)
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Checks []check `json:"checks"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	by := map[string]check{}
	for _, c := range doc.Checks {
		by[c.Name] = c
		if c.Status != statusOK && c.Status != statusWarn && c.Status != statusFail {
			t.Errorf("status %q", c.Status)
		}
	}
	for name, status := range map[string]string{"api": statusOK, "gossip port": statusOK, "QUIC port": statusOK, "cluster key": statusOK,
		"peer keys": statusOK, "history": statusOK, "hub": statusWarn, "mdns": statusOK} {
		if by[name].Status != status {
			t.Errorf("%s: %+v, want %s", name, by[name], status)
		}
	}
	if !strings.Contains(by["cluster key"].Detail, filepath.Join(home, "cluster-key")) || !strings.Contains(by["cluster key"].Detail, "0600") {
		t.Errorf("cluster key: %+v", by["cluster key"])
	}
	if want := 0; failed(doc.Checks) {
		want = 1
		if code != want {
			t.Errorf("exit %d with a failed check", code)
		}
	} else if code != 0 {
		t.Errorf("exit %d without a failed check: %s", code, out)
	}
	// The text form: one line a check and the tally.
	cmd = exec.Command(skulkBinary(t), "doctor", "--home", home, "--host", n.host, "--no-mdns")
	cmd.Env = append(os.Environ(), "SKULK_HOST=", "SKULK_API_KEY=", "SKULK_CLUSTER_KEY=", "SKULK_OFFLINE=1")
	text, _ := cmd.Output()
	if !strings.Contains(string(text), "ok    api") || !strings.Contains(string(text), " ok, ") {
		t.Errorf("text:\n%s", text)
	}
}

// TestCPUCheckPacking: the cpu line says which weight types are packed at
// load, or that SKULK_PACK=off keeps them as stored.
func TestCPUCheckPacking(t *testing.T) {
	for _, tc := range []struct {
		facts cpuFacts
		want  string
	}{
		{cpuFacts{Kernels: "avx2", Packed: "Q8_0, Q4_0, MXFP4"}, "; Q8_0, Q4_0, MXFP4 weights packed at load"},
		{cpuFacts{Kernels: "avx2", Packed: "Q8_0", NoPack: true}, "; weights kept as stored (SKULK_PACK=off)"},
	} {
		if d := cpuCheck(tc.facts).Detail; !strings.Contains(d, tc.want) {
			t.Errorf("detail %q lacks %q", d, tc.want)
		}
	}
	if d := cpuCheck(cpuFacts{Kernels: "generic"}).Detail; strings.Contains(d, "pack") {
		t.Errorf("generic kernels: detail %q mentions packing", d)
	}
	if c := gatherCPU("", false); c.Kernels == "avx2" && c.Packed == "" {
		t.Errorf("the avx2 kernels report no packed type: %+v", c)
	}
}
