package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnvAndValidate(t *testing.T) {
	n := FromEnv(env(map[string]string{"SKULK_HOME": "/tmp/h", "SKULK_API_ADDR": "127.0.0.1:9", "SKULK_OFFLINE": "1", "SKULK_API_KEY": "sekrit",
		"SKULK_CLUSTER_KEY": "cluster-secret", "SKULK_BOOTSTRAP_PEERS": "10.0.0.1:52416, 10.0.0.2:52416",
		"SKULK_IMPORT_DIRS": "/srv/gguf, ,/data/in"}))
	if n.Home != "/tmp/h" || n.APIAddr != "127.0.0.1:9" || !n.Offline || n.APIKey != "sekrit" {
		t.Fatalf("%+v", n)
	}
	if err := n.Validate(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(n.String(), "sekrit") || strings.Contains(n.String(), "cluster-secret") {
		t.Fatal("String leaks a secret")
	}
	if len(n.BootstrapPeers) != 2 || n.BootstrapPeers[1] != "10.0.0.2:52416" || n.ClusterKey != "cluster-secret" {
		t.Fatalf("cluster settings %+v", n)
	}
	if n.MaxInstances != DefaultMaxInstances || n.MaxInstancesPerModel != DefaultMaxInstancesPerModel {
		t.Errorf("instance limits %d, %d without the environment, want the defaults", n.MaxInstances, n.MaxInstancesPerModel)
	}
	if len(n.ImportDirs) != 2 || n.ImportDirs[0] != "/srv/gguf" || n.ImportDirs[1] != "/data/in" {
		t.Fatalf("import dirs %q", n.ImportDirs)
	}
	if d := FromEnv(env(nil)).ImportDirs; d != nil {
		t.Fatalf("import dirs without SKULK_IMPORT_DIRS: %q; want none (the node's default)", d)
	}
	if h := DefaultHome(env(map[string]string{"XDG_DATA_HOME": "/x"})); h != "/x/skulk" {
		t.Errorf("XDG home %s", h)
	}
	bad := []func(*Node){
		func(n *Node) { n.Home = "" },
		func(n *Node) { n.APIAddr = "nope" },
		func(n *Node) { n.LogFormat = "xml" },
		func(n *Node) { n.LogLevel = "loud" },
		func(n *Node) { n.Threads = -1 },
		func(n *Node) { n.GossipAddr = "52416" },
		func(n *Node) { n.BootstrapPeers = []string{"no-port"} },
		func(n *Node) { n.MaxInstances = -1 },
		func(n *Node) { n.MaxInstancesPerModel = -1 },
	}
	for i, f := range bad {
		c := n
		f(&c)
		if c.Validate() == nil {
			t.Errorf("case %d accepted", i)
		}
	}
}

func TestInstanceLimitsFromEnv(t *testing.T) {
	tests := []struct {
		max, perModel         string
		wantMax, wantPerModel int
		wantErr               string // "" when valid
	}{
		{"", "", DefaultMaxInstances, DefaultMaxInstancesPerModel, ""},
		{"3", " 5 ", 3, 5, ""},
		{"0", "0", 0, 0, ""}, // 0 means the default downstream
		{"-1", "", -1, DefaultMaxInstancesPerModel, "--max-instances (SKULK_MAX_INSTANCES) -1 must not be negative"},
		{"", "-2", DefaultMaxInstances, -2, "--max-instances-per-model (SKULK_MAX_INSTANCES_PER_MODEL) -2 must not be negative"},
		{"many", "", DefaultMaxInstances, DefaultMaxInstancesPerModel, `SKULK_MAX_INSTANCES="many" must be a whole number`},
		{"", "1.5", DefaultMaxInstances, DefaultMaxInstancesPerModel, `SKULK_MAX_INSTANCES_PER_MODEL="1.5" must be a whole number`},
	}
	for _, tt := range tests {
		n := FromEnv(env(map[string]string{"SKULK_HOME": "/tmp/h", "SKULK_MAX_INSTANCES": tt.max, "SKULK_MAX_INSTANCES_PER_MODEL": tt.perModel}))
		if n.MaxInstances != tt.wantMax || n.MaxInstancesPerModel != tt.wantPerModel {
			t.Errorf("env %q, %q: limits %d, %d; want %d, %d", tt.max, tt.perModel, n.MaxInstances, n.MaxInstancesPerModel, tt.wantMax, tt.wantPerModel)
		}
		err := n.Validate()
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("env %q, %q: %v", tt.max, tt.perModel, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("env %q, %q: error %v, want one containing %q", tt.max, tt.perModel, err, tt.wantErr)
		}
	}
}

func TestHTTPBoundsFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		body    time.Duration
		idle    time.Duration
		conns   int
		total   int
		wantErr string // a part of Validate's error; "" for none
	}{
		{name: "defaults", total: DefaultMaxConns, body: DefaultHTTPBodyTimeout, idle: DefaultHTTPIdleTimeout, conns: DefaultMaxConnsPerClient},
		{name: "set", total: DefaultMaxConns, env: map[string]string{"SKULK_HTTP_BODY_TIMEOUT": "1500ms", "SKULK_HTTP_IDLE_TIMEOUT": "2m", "SKULK_MAX_CONNS_PER_CLIENT": "8"},
			body: 1500 * time.Millisecond, idle: 2 * time.Minute, conns: 8},
		{name: "off", env: map[string]string{"SKULK_HTTP_BODY_TIMEOUT": "0", "SKULK_HTTP_IDLE_TIMEOUT": "0s", "SKULK_MAX_CONNS_PER_CLIENT": "0", "SKULK_MAX_CONNS": "0"}},
		{name: "not_a_duration", total: DefaultMaxConns, env: map[string]string{"SKULK_HTTP_BODY_TIMEOUT": "30"}, idle: DefaultHTTPIdleTimeout, conns: DefaultMaxConnsPerClient,
			wantErr: `SKULK_HTTP_BODY_TIMEOUT="30" must be a duration`},
		{name: "negative", total: DefaultMaxConns, env: map[string]string{"SKULK_HTTP_IDLE_TIMEOUT": "-1s"}, body: DefaultHTTPBodyTimeout, idle: -time.Second, conns: DefaultMaxConnsPerClient,
			wantErr: "must not be negative"},
		{name: "conns_not_a_number", total: DefaultMaxConns, env: map[string]string{"SKULK_MAX_CONNS_PER_CLIENT": "many"}, body: DefaultHTTPBodyTimeout, idle: DefaultHTTPIdleTimeout,
			wantErr: "SKULK_MAX_CONNS_PER_CLIENT"},
		{name: "conns_negative", total: DefaultMaxConns, env: map[string]string{"SKULK_MAX_CONNS_PER_CLIENT": "-2"}, body: DefaultHTTPBodyTimeout, idle: DefaultHTTPIdleTimeout, conns: -2,
			wantErr: "--max-conns-per-client"},
		{name: "total_set", env: map[string]string{"SKULK_MAX_CONNS": "300"}, body: DefaultHTTPBodyTimeout, idle: DefaultHTTPIdleTimeout, conns: DefaultMaxConnsPerClient, total: 300},
		{name: "total_not_a_number", env: map[string]string{"SKULK_MAX_CONNS": "lots"}, body: DefaultHTTPBodyTimeout, idle: DefaultHTTPIdleTimeout, conns: DefaultMaxConnsPerClient,
			wantErr: "SKULK_MAX_CONNS="},
		{name: "total_negative", env: map[string]string{"SKULK_MAX_CONNS": "-1"}, body: DefaultHTTPBodyTimeout, idle: DefaultHTTPIdleTimeout, conns: DefaultMaxConnsPerClient, total: -1,
			wantErr: "--max-conns (SKULK_MAX_CONNS) must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := map[string]string{"SKULK_HOME": t.TempDir()}
			maps.Copy(m, tt.env)
			n := FromEnv(env(m))
			if n.HTTPBodyTimeout != tt.body || n.HTTPIdleTimeout != tt.idle || n.MaxConnsPerClient != tt.conns || n.MaxConns != tt.total {
				t.Errorf("body %s idle %s conns %d total %d, want %s %s %d %d", n.HTTPBodyTimeout, n.HTTPIdleTimeout, n.MaxConnsPerClient, n.MaxConns, tt.body, tt.idle, tt.conns, tt.total)
			}
			err := n.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Validate: %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestFromEnvVariables(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		check   func(Node) bool
		wantErr string // "" when valid
	}{
		{name: "defaults", env: nil, check: func(n Node) bool {
			return n.ModelsDir == "" && n.CustomModelCardsDir == "" && n.HubEndpoint == "" && n.HFToken == "" && !n.Offline && n.Engine.Kernels == ""
		}},
		{name: "models_dir", env: map[string]string{"SKULK_MODELS_DIR": "/srv/models"}, check: func(n Node) bool { return n.ModelsDir == "/srv/models" }},
		{name: "custom_cards_dir", env: map[string]string{"SKULK_CUSTOM_MODEL_CARDS_DIR": "/srv/cards"}, check: func(n Node) bool { return n.CustomModelCardsDir == "/srv/cards" }},
		{name: "hf_endpoint", env: map[string]string{"HF_ENDPOINT": " https://mirror.example "}, check: func(n Node) bool { return n.HubEndpoint == "https://mirror.example" }},
		{name: "hf_token", env: map[string]string{"HF_TOKEN": " hf_secret "}, check: func(n Node) bool { return n.HFToken == "hf_secret" }},
		{name: "offline_1", env: map[string]string{"SKULK_OFFLINE": "1"}, check: func(n Node) bool { return n.Offline }},
		{name: "offline_true", env: map[string]string{"SKULK_OFFLINE": "TRUE"}, check: func(n Node) bool { return n.Offline }},
		{name: "offline_yes", env: map[string]string{"SKULK_OFFLINE": "yes"}, check: func(n Node) bool { return n.Offline }},
		{name: "offline_on", env: map[string]string{"SKULK_OFFLINE": " on "}, check: func(n Node) bool { return n.Offline }},
		{name: "offline_0", env: map[string]string{"SKULK_OFFLINE": "0"}, check: func(n Node) bool { return !n.Offline }},
		{name: "offline_no", env: map[string]string{"SKULK_OFFLINE": "no"}, check: func(n Node) bool { return !n.Offline }},
		{name: "kernels_generic", env: map[string]string{"SKULK_KERNELS": "generic"}, check: func(n Node) bool { return n.Engine.Kernels == KernelsGeneric }},
		{name: "kernels_avx2", env: map[string]string{"SKULK_KERNELS": " AVX2 "}, check: func(n Node) bool { return n.Engine.Kernels == KernelsAVX2 }},
		{name: "kernels_neon", env: map[string]string{"SKULK_KERNELS": "neon"}, check: func(n Node) bool { return n.Engine.Kernels == KernelsNEON }},
		{name: "kernels_unknown", env: map[string]string{"SKULK_KERNELS": "avx512"}, check: func(n Node) bool { return n.Engine.Kernels == "" },
			wantErr: `SKULK_KERNELS="avx512" must be generic, avx2 or neon`},
		{name: "pack_default", env: map[string]string{}, check: func(n Node) bool { return !n.Engine.NoPack }},
		{name: "pack_off", env: map[string]string{"SKULK_PACK": " OFF "}, check: func(n Node) bool { return n.Engine.NoPack }},
		{name: "pack_on", env: map[string]string{"SKULK_PACK": "1"}, check: func(n Node) bool { return !n.Engine.NoPack }},
		{name: "pack_unknown", env: map[string]string{"SKULK_PACK": "sometimes"}, check: func(n Node) bool { return !n.Engine.NoPack },
			wantErr: `SKULK_PACK="sometimes" must be on or off`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"SKULK_HOME": "/tmp/h"}
			for k, v := range tt.env {
				env[k] = v
			}
			n := FromEnv(func(k string) string { return env[k] })
			if !tt.check(n) {
				t.Fatalf("env %v gave %+v", tt.env, n)
			}
			err := n.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatal(err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			// What the offline flag logs is what the Hub client gets.
			if s := n.String(); !strings.Contains(s, "offline="+strconv.FormatBool(n.Offline)) {
				t.Errorf("String() %q does not say offline=%v", s, n.Offline)
			}
		})
	}
}

// TestStringHidesHFToken: the configuration's description says whether
// HF_TOKEN is set, never what it is.
func TestStringHidesHFToken(t *testing.T) {
	n := FromEnv(env(map[string]string{"SKULK_HOME": "/tmp/h", "HF_TOKEN": "hf_topsecret", "HF_ENDPOINT": "https://mirror.example"}))
	s := n.String()
	if strings.Contains(s, "hf_topsecret") || !strings.Contains(s, "hf_token=set") || !strings.Contains(s, "hub=https://mirror.example") {
		t.Fatalf("String() = %q", s)
	}
	if s := FromEnv(env(map[string]string{"SKULK_HOME": "/tmp/h"})).String(); !strings.Contains(s, "hf_token=unset") {
		t.Fatalf("String() without HF_TOKEN = %q", s)
	}
	b, err := json.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "hf_topsecret") {
		t.Fatalf("JSON carries the token: %s", b)
	}
}

func TestEngineFromEnv(t *testing.T) {
	tests := []struct {
		env, want string
		wantErr   bool
	}{
		{env: "", want: ""},
		{env: "generic", want: KernelsGeneric},
		{env: "Neon", want: KernelsNEON},
		{env: "sse2", wantErr: true},
	}
	for _, tt := range tests {
		e, err := EngineFromEnv(env(map[string]string{"SKULK_KERNELS": tt.env}))
		if e.Kernels != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("SKULK_KERNELS=%q: %+v, %v; want %q (error %v)", tt.env, e, err, tt.want, tt.wantErr)
		}
	}
}

// TestEngineServingSettings: SKULK_SLOTS and SKULK_PREFIX_CACHE_MB are
// read, and values a runner could not use refused at start.
func TestEngineServingSettings(t *testing.T) {
	for _, tt := range []struct {
		slots, prefix string
		want          string // the settings as "slots/prefix", or the error
	}{
		{"", "", "0/default"},
		{"16", "256", "16/256"},
		{" 2 ", "0", "2/0"},
		{"0", "", `SKULK_SLOTS="0" must be a number of requests from 1 to 1024`},
		{"many", "", `SKULK_SLOTS="many"`},
		{"", "-1", `SKULK_PREFIX_CACHE_MB="-1" must be a number of MiB`},
	} {
		e, err := EngineFromEnv(env(map[string]string{"SKULK_SLOTS": tt.slots, "SKULK_PREFIX_CACHE_MB": tt.prefix}))
		got := ""
		switch {
		case err != nil:
			got = err.Error()
		case e.PrefixCacheMB == nil:
			got = fmt.Sprintf("%d/default", e.Slots)
		default:
			got = fmt.Sprintf("%d/%d", e.Slots, *e.PrefixCacheMB)
		}
		if !strings.Contains(got, tt.want) {
			t.Errorf("SKULK_SLOTS=%q SKULK_PREFIX_CACHE_MB=%q: %s, want %s", tt.slots, tt.prefix, got, tt.want)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"1500000000", 1500000000, false},
		{"8GiB", 8 << 30, false},
		{"512MiB", 512 << 20, false},
		{"512mib", 512 << 20, false},
		{"2G", 2e9, false},
		{"2GB", 2e9, false},
		{"1.5GiB", 3 << 29, false},
		{" 64 KiB ", 64 << 10, false},
		{"", 0, true},
		{"GiB", 0, true},
		{"-1", 0, true},
		{"8 parsecs", 0, true},
		{"9999999TiB", 0, true},
	} {
		got, err := ParseBytes(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.bad)
		}
	}
	n := FromEnv(env(map[string]string{"SKULK_HOME": "/tmp/h", "SKULK_MEMORY_BUDGET": "4GiB"}))
	if n.MemoryBudget != 4<<30 || n.Validate() != nil {
		t.Fatalf("budget %d, %v", n.MemoryBudget, n.Validate())
	}
	if err := FromEnv(env(map[string]string{"SKULK_HOME": "/tmp/h", "SKULK_MEMORY_BUDGET": "lots"})).Validate(); err == nil || !strings.Contains(err.Error(), "SKULK_MEMORY_BUDGET") {
		t.Fatalf("a bad budget: %v", err)
	}
}

func TestMetricsPublicFromEnv(t *testing.T) {
	tests := []struct {
		value string
		want  bool
	}{
		{"", false},
		{"1", true},
		{"yes", true},
		{" ON ", true},
		{"0", false},
		{"no", false},
	}
	for _, tt := range tests {
		n := FromEnv(env(map[string]string{"SKULK_HOME": "/tmp/h", "SKULK_METRICS_PUBLIC": tt.value}))
		if n.MetricsPublic != tt.want {
			t.Errorf("SKULK_METRICS_PUBLIC=%q: MetricsPublic %v, want %v", tt.value, n.MetricsPublic, tt.want)
		}
		if !strings.Contains(n.String(), "metrics_public="+strconv.FormatBool(tt.want)) {
			t.Errorf("SKULK_METRICS_PUBLIC=%q: String() %q does not show metrics_public", tt.value, n.String())
		}
	}
}

func TestLogFreeFloorFromEnv(t *testing.T) {
	tests := []struct {
		name, value string
		want        int64
		wantErr     bool
	}{
		{"unset", "", 0, false},
		{"bytes", "536870912", 512 << 20, false},
		{"off", "0", LogFreeFloorOff, false},
		{"negative", "-5", 0, true},
		{"units", "1GiB", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := FromEnv(env(map[string]string{"SKULK_HOME": "/tmp/h", "SKULK_LOG_FREE_FLOOR": tt.value}))
			err := n.Validate()
			if (err != nil) != tt.wantErr || (err == nil && n.LogFreeFloor != tt.want) {
				t.Fatalf("floor %d, error %v; want %d, error %v", n.LogFreeFloor, err, tt.want, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "SKULK_LOG_FREE_FLOOR") {
				t.Fatalf("error %v does not name the variable", err)
			}
		})
	}
}

// TestGroupConnectTimeoutFromEnv: SKULK_GROUP_CONNECT_TIMEOUT is a
// duration; a bad one says so, a negative one fails validation.
func TestGroupConnectTimeoutFromEnv(t *testing.T) {
	n := FromEnv(env(map[string]string{"SKULK_HOME": "/tmp/h", "SKULK_GROUP_CONNECT_TIMEOUT": "90s"}))
	if n.GroupConnectTimeout != 90*time.Second || n.Validate() != nil {
		t.Fatalf("timeout %s, %v", n.GroupConnectTimeout, n.Validate())
	}
	if err := FromEnv(env(map[string]string{"SKULK_HOME": "/tmp/h", "SKULK_GROUP_CONNECT_TIMEOUT": "soon"})).Validate(); err == nil || !strings.Contains(err.Error(), "SKULK_GROUP_CONNECT_TIMEOUT") {
		t.Fatalf("a bad timeout: %v", err)
	}
	if err := FromEnv(env(map[string]string{"SKULK_HOME": "/tmp/h", "SKULK_GROUP_CONNECT_TIMEOUT": "-1s"})).Validate(); err == nil || !strings.Contains(err.Error(), "group-connect-timeout") {
		t.Fatalf("a negative timeout: %v", err)
	}
}

// TestPort: --port (SKULK_PORT) puts the API on N, gossip on N+1 and QUIC
// on N+2, keeping each address's host; an address given on its own wins.
func TestPort(t *testing.T) {
	tests := []struct {
		name            string
		env             map[string]string
		port            int               // --port; 0: not given
		kept            []string          // the address flags given on the command line
		set             map[string]string // their values
		api, gossip, qc string
		wantErr         string // a part of the error; "" for none
	}{
		{name: "defaults", api: DefaultAPIAddr, gossip: DefaultGossipAddr, qc: DefaultQUICAddr},
		{name: "flag", port: 8080, api: "0.0.0.0:8080", gossip: "0.0.0.0:8081", qc: "0.0.0.0:8082"},
		{name: "env", env: map[string]string{"SKULK_PORT": " 9000 "}, api: "0.0.0.0:9000", gossip: "0.0.0.0:9001", qc: "0.0.0.0:9002"},
		{name: "flag_over_env", env: map[string]string{"SKULK_PORT": "9000"}, port: 8080, api: "0.0.0.0:8080", gossip: "0.0.0.0:8081", qc: "0.0.0.0:8082"},
		{name: "api_addr_flag_wins", port: 8080, kept: []string{"api-addr"}, set: map[string]string{"api-addr": "127.0.0.1:7000"},
			api: "127.0.0.1:7000", gossip: "0.0.0.0:8081", qc: "0.0.0.0:8082"},
		{name: "gossip_and_quic_flags_win", port: 8080, kept: []string{"gossip-addr", "quic-addr"}, set: map[string]string{"gossip-addr": "10.0.0.1:1", "quic-addr": "10.0.0.1:2"},
			api: "0.0.0.0:8080", gossip: "10.0.0.1:1", qc: "10.0.0.1:2"},
		{name: "api_addr_env_wins_over_port_env", env: map[string]string{"SKULK_PORT": "9000", "SKULK_API_ADDR": "127.0.0.1:7000"},
			api: "127.0.0.1:7000", gossip: "0.0.0.0:9001", qc: "0.0.0.0:9002"},
		{name: "port_flag_keeps_env_host", env: map[string]string{"SKULK_API_ADDR": "127.0.0.1:7000"}, port: 8080,
			api: "127.0.0.1:8080", gossip: "0.0.0.0:8081", qc: "0.0.0.0:8082"},
		{name: "ipv6_host", port: 8080, env: map[string]string{"SKULK_API_ADDR": "[::1]:1"},
			api: "[::1]:8080", gossip: "0.0.0.0:8081", qc: "0.0.0.0:8082"},
		{name: "highest", port: MaxPort, api: "0.0.0.0:65533", gossip: "0.0.0.0:65534", qc: "0.0.0.0:65535"},
		{name: "too_high", port: MaxPort + 1, api: DefaultAPIAddr, gossip: DefaultGossipAddr, qc: DefaultQUICAddr, wantErr: "--port 65534 must be from 1 to 65533"},
		{name: "negative", port: -1, api: DefaultAPIAddr, gossip: DefaultGossipAddr, qc: DefaultQUICAddr, wantErr: "--port -1 must be from 1 to 65533"},
		{name: "env_not_a_number", env: map[string]string{"SKULK_PORT": "http"}, api: DefaultAPIAddr, gossip: DefaultGossipAddr, qc: DefaultQUICAddr,
			wantErr: `SKULK_PORT="http" must be a port from 1 to 65533`},
		{name: "env_zero", env: map[string]string{"SKULK_PORT": "0"}, api: DefaultAPIAddr, gossip: DefaultGossipAddr, qc: DefaultQUICAddr,
			wantErr: `SKULK_PORT="0" must be a port`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := map[string]string{"SKULK_HOME": "/tmp/h"}
			maps.Copy(m, tt.env)
			n := FromEnv(env(m))
			// As skulk serve parses its flags: the address flags set their
			// fields, then a --port given derives the others.
			for flag, v := range tt.set {
				*map[string]*string{"api-addr": &n.APIAddr, "gossip-addr": &n.GossipAddr, "quic-addr": &n.QUICAddr}[flag] = v
			}
			var err error
			if tt.port != 0 {
				err = n.UsePort(tt.port, func(f string) bool { return slices.Contains(tt.kept, f) })
			}
			if err == nil {
				err = n.Validate()
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatal(err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			if n.APIAddr != tt.api || n.GossipAddr != tt.gossip || n.QUICAddr != tt.qc {
				t.Errorf("api %s gossip %s quic %s, want %s %s %s", n.APIAddr, n.GossipAddr, n.QUICAddr, tt.api, tt.gossip, tt.qc)
			}
		})
	}
}

// TestNodeName: --name (SKULK_NAME) names the node; unset, the machine's
// host name does (its first label, made fit for a name); a name with a
// character a name may not hold is refused.
func TestNodeName(t *testing.T) {
	host := func(h string, err error) func() (string, error) { return func() (string, error) { return h, err } }
	tests := []struct {
		name     string
		env      string // SKULK_NAME
		flag     string // --name; "" when not given
		hostname func() (string, error)
		want     string
		wantErr  string
	}{
		{name: "hostname", hostname: host("studio", nil), want: "studio"},
		{name: "hostname_first_label", hostname: host("studio.local", nil), want: "studio"},
		{name: "hostname_made_fit", hostname: host("Mac Studio+1", nil), want: "Mac-Studio-1"},
		{name: "hostname_cut", hostname: host(strings.Repeat("h", 70), nil), want: strings.Repeat("h", MaxNameLen)},
		{name: "no_hostname", hostname: host("", errors.New("none")), want: ""},
		{name: "env", env: " kitchen ", hostname: host("studio", nil), want: "kitchen"},
		{name: "flag", flag: "attic-2", hostname: host("studio", nil), want: "attic-2"},
		{name: "flag_over_env", env: "kitchen", flag: "attic_2.b", hostname: host("studio", nil), want: "attic_2.b"},
		{name: "space_refused", flag: "my box", hostname: host("studio", nil), want: "my box", wantErr: `--name (SKULK_NAME) "my box" must be`},
		{name: "too_long_refused", env: strings.Repeat("n", 64), hostname: host("studio", nil), want: strings.Repeat("n", 64), wantErr: "must be 1 to 63"},
		{name: "longest", env: strings.Repeat("n", 63), hostname: host("studio", nil), want: strings.Repeat("n", 63)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := FromEnv(env(map[string]string{"SKULK_HOME": "/tmp/h", "SKULK_NAME": tt.env}))
			if tt.flag != "" { // as skulk serve's --name sets it
				n.Name = tt.flag
			}
			err := n.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatal(err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			if got := n.nodeName(tt.hostname); got != tt.want {
				t.Errorf("name %q, want %q", got, tt.want)
			}
		})
	}
	if s := FromEnv(env(map[string]string{"SKULK_HOME": "/tmp/h", "SKULK_NAME": "kitchen"})).String(); !strings.HasPrefix(s, "name=kitchen ") {
		t.Errorf("String() %q does not start with the name", s)
	}
}
