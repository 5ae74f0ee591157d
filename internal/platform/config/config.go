// Package config turns flags and environment into one validated node
// configuration. It is the only package that reads the environment (the
// composition root hands it os.Getenv); everything else gets its settings
// passed down. Secrets (the API keys, HF_TOKEN) come only from the
// environment, the cluster key from the environment or an invite line
// (--join); none is ever printed.
package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Defaults.
const (
	DefaultAPIPort    = 52415
	DefaultAPIAddr    = "0.0.0.0:52415"
	DefaultGossipAddr = "0.0.0.0:52416"
	DefaultQUICAddr   = "0.0.0.0:52417"

	// DefaultMaxInstances and DefaultMaxInstancesPerModel are the placement
	// planner's defaults (internal/control/placement), restated because this package
	// imports only the standard library; a node test checks they agree.
	DefaultMaxInstances         = 16
	DefaultMaxInstancesPerModel = 16
	// DefaultHTTPBodyTimeout bounds how long a request body may take to
	// arrive; DefaultHTTPIdleTimeout how long a keep-alive connection may
	// sit idle; DefaultMaxConnsPerClient how many connections one client
	// (an API key, or an address without one) may hold open;
	// DefaultMaxConns how many all clients together may, well under the
	// usual descriptor limits.
	DefaultHTTPBodyTimeout   = 30 * time.Second
	DefaultHTTPIdleTimeout   = 120 * time.Second
	DefaultMaxConnsPerClient = 64
	DefaultMaxConns          = 1024
	// DefaultKeepAlive is how long an on-demand instance stays loaded idle
	// (Ollama's default).
	DefaultKeepAlive = 5 * time.Minute

	// DefaultGroupConnectTimeout bounds how long a split instance may take
	// to come up (master.DefaultGroupConnectTimeout).
	DefaultGroupConnectTimeout = 120 * time.Second

	// DefaultLogFreeFloor is the event log's free-space floor on a large
	// disk (internal/control/eventlog.DefaultFreeSpaceFloor, restated because this
	// package imports only the standard library).
	DefaultLogFreeFloor = 2 << 30
	// LogFreeFloorOff as Node.LogFreeFloor turns the free-space check off.
	LogFreeFloorOff = -1
)

// Node is the configuration of `skulk run`.
type Node struct {
	// Name (--name, SKULK_NAME) is what people call the node: it shows
	// beside the node's id in skulk nodes, skulk ps, the diagnostics and
	// the logs. Empty means the machine's host name (NodeName).
	Name      string
	Home      string // state directory: event log, node id, model cache
	APIAddr   string // host:port of the HTTP API
	Offline   bool   // never touch the network for models
	LogFormat string // text or json
	LogLevel  string // debug, info, warn, error
	Threads   int    // engine threads per runner (0 = physical cores)
	// Port (--port, SKULK_PORT) is the API's port, with gossip on Port+1
	// and QUIC on Port+2 (UsePort); 0 leaves the addresses as they are.
	Port int
	// APIKey (SKULK_API_KEY) is the admin key: it admits every route. Like
	// InferenceKeys it is enforced by every member of the cluster, which
	// shares its digest, never the key.
	APIKey string `json:"-"`
	// InferenceKeys (SKULK_INFERENCE_KEYS) is a comma-separated list of
	// NAME=KEY (or bare KEY) entries that admit the inference and read-only
	// routes but not the admin ones.
	InferenceKeys string `json:"-"`
	// APIOpen (--api-open, SKULK_API_OPEN=1) serves clients on every address
	// without a key when no key is set in the cluster; without it such a
	// node serves loopback clients only.
	APIOpen bool
	// MetricsPublic (--metrics-public, SKULK_METRICS_PUBLIC=1) serves GET
	// /metrics to every address without a key, whatever keys are set.
	MetricsPublic bool

	// ImportDirs (--import-dir, SKULK_IMPORT_DIRS) are the only directories
	// POST /models/import reads under; empty means the models directory's
	// import/ folder, plus the home directory of the node's user for
	// requests from loopback.
	ImportDirs []string

	// Bounds on what one HTTP client can hold (0 turns a bound off).
	HTTPBodyTimeout   time.Duration // SKULK_HTTP_BODY_TIMEOUT: a request body must arrive within it
	HTTPIdleTimeout   time.Duration // SKULK_HTTP_IDLE_TIMEOUT: keep-alive connections idle longer are closed
	MaxConnsPerClient int           // --max-conns-per-client, SKULK_MAX_CONNS_PER_CLIENT: open API connections per API key, or per client IP without one
	MaxConns          int           // --max-conns, SKULK_MAX_CONNS: open API connections in all

	// MemoryBudget (--memory-budget, SKULK_MEMORY_BUDGET) caps the memory
	// placement may count on this node, in bytes; 0 means the machine's.
	MemoryBudget int64

	// KeepAlive (SKULK_KEEP_ALIVE) is how long an instance a request
	// placed on demand stays loaded once idle, for a request that names no
	// keep_alive of its own (Ollama's field): 0 unloads it right after its
	// requests, a negative duration never. Explicit placements never
	// unload.
	KeepAlive time.Duration

	// GroupConnectTimeout (--group-connect-timeout,
	// SKULK_GROUP_CONNECT_TIMEOUT) is how long a split instance may take to
	// load every rank and connect every edge before the master (this node,
	// while it is master) tears it down and places it again; 0 means
	// DefaultGroupConnectTimeout.
	GroupConnectTimeout time.Duration
	// VoterTimeout (--voter-timeout, SKULK_VOTER_TIMEOUT) is how long a
	// voter of the control plane may be gone before a healthy learner
	// replaces it; 0 means 5 minutes.
	VoterTimeout time.Duration

	// Cluster.
	GossipAddr     string   // membership (SWIM gossip) HOST:PORT
	QUICAddr       string   // transport endpoint HOST:PORT
	BootstrapPeers []string // gossip addresses to join; empty relies on mDNS
	NoMDNS         bool     // do not discover peers by mDNS
	// ClusterKey (SKULK_CLUSTER_KEY) admits nodes to the cluster; empty
	// uses the zero-config default derived from the network version.
	ClusterKey string `json:"-"`
	// Join (--join) is an invite line printed by a member (`skulk cluster
	// invite`): the cluster key and hints of where the members are.
	Join string `json:"-"`
	// OpenCluster (--open-cluster) uses the public key derived from the
	// network version: any host that reaches the gossip port joins.
	OpenCluster bool
	// NetworkVersion (SKULK_NETWORK_VERSION) overrides the wire version;
	// nodes of different versions refuse each other. For tests and staged
	// upgrades only.
	NetworkVersion string

	// Placement bounds; 0 means the default.
	// MaxInstances (SKULK_MAX_INSTANCES) bounds the runners the cluster may
	// place on this node; the node publishes it with its resources.
	MaxInstances int
	// MaxInstancesPerModel (SKULK_MAX_INSTANCES_PER_MODEL) bounds the
	// instances of one model in the cluster while this node is master.
	MaxInstancesPerModel int

	// Models.
	// ModelsDir (SKULK_MODELS_DIR) holds downloaded and imported weights;
	// empty means HOME/models.
	ModelsDir string
	// CustomModelCardsDir (SKULK_CUSTOM_MODEL_CARDS_DIR) holds the
	// operator's model cards; empty means HOME/custom_model_cards.
	CustomModelCardsDir string
	// HubEndpoint (HF_ENDPOINT) is a Hugging Face Hub mirror; empty means
	// the Hub itself.
	HubEndpoint string
	// HFToken (HF_TOKEN) is sent to the Hub's host for gated and private
	// repositories.
	HFToken string `json:"-"`

	// LogFreeFloor (SKULK_LOG_FREE_FLOOR, bytes) is the free disk space
	// under which the event log stops writing (and the node reports its
	// persistence degraded); 0 means the default, the smaller of
	// DefaultLogFreeFloor and 5% of the home's filesystem, and
	// LogFreeFloorOff (SKULK_LOG_FREE_FLOOR=0) turns the check off.
	LogFreeFloor int64

	// Engine is what the node's runners take from the environment.
	Engine Engine

	// envErr holds what FromEnv could not parse; Validate reports it.
	envErr error
}

// Engine is the engine's configuration: what `skulk run` passes to its
// runners and what the commands that run the engine in this process
// (generate, bench, dev) read.
type Engine struct {
	// Kernels (SKULK_KERNELS) caps the kernel set the engine picks for the
	// CPU: "generic" (the portable Go kernels), "avx2" (no AVX-512) or
	// "neon" (no SDOT); empty means the best the CPU has. For testing.
	Kernels string
	// NoPack (SKULK_PACK=off) keeps weights as the file stores them,
	// memory-mapped, instead of packing them for the kernels into memory
	// of their own (slower, but the OS can drop and reread mapped pages
	// when a model nearly fills the machine's memory).
	NoPack bool
	// Slots (SKULK_SLOTS) is how many requests each runner generates at
	// once; 0 leaves the runner's default (runner.DefaultSlots, as far as
	// the window holds them). A runner refuses to load with more than its
	// window holds.
	Slots int
	// PrefixCacheMB (SKULK_PREFIX_CACHE_MB) bounds each runner's prefix
	// cache; nil leaves the runner's default (the KV memory placement
	// admitted for its window), 0 keeps none.
	PrefixCacheMB *int
}

// Kernel caps; tensor.Capped accepts the same names.
const (
	KernelsGeneric = "generic"
	KernelsAVX2    = "avx2"
	KernelsNEON    = "neon"
)

// EngineFromEnv reads the engine's configuration through getenv.
func EngineFromEnv(getenv func(string) string) (Engine, error) {
	e := Engine{Kernels: strings.ToLower(strings.TrimSpace(getenv("SKULK_KERNELS")))}
	switch e.Kernels {
	case "", KernelsGeneric, KernelsAVX2, KernelsNEON:
	default:
		return Engine{}, fmt.Errorf("config: SKULK_KERNELS=%q must be %s, %s or %s (or unset for the best the CPU has)",
			e.Kernels, KernelsGeneric, KernelsAVX2, KernelsNEON)
	}
	switch v := strings.ToLower(strings.TrimSpace(getenv("SKULK_PACK"))); v {
	case "", "on", "1", "true":
	case "off", "0", "false":
		e.NoPack = true
	default:
		return Engine{}, fmt.Errorf("config: SKULK_PACK=%q must be on or off (off keeps weights as the file stores them)", v)
	}
	if v := strings.TrimSpace(getenv("SKULK_SLOTS")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxSlots {
			return Engine{}, fmt.Errorf("config: SKULK_SLOTS=%q must be a number of requests from 1 to %d", v, maxSlots)
		}
		e.Slots = n
	}
	if v := strings.TrimSpace(getenv("SKULK_PREFIX_CACHE_MB")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return Engine{}, fmt.Errorf("config: SKULK_PREFIX_CACHE_MB=%q must be a number of MiB (0 keeps no prefix cache)", v)
		}
		e.PrefixCacheMB = &n
	}
	return e, nil
}

// maxSlots bounds SKULK_SLOTS: a runner's slots each hold a cache, and a
// number beyond any window's means a typo.
const maxSlots = 1024

// String describes the configuration without its secrets.
func (n Node) String() string {
	key := "unset"
	if n.APIKey != "" {
		key = "set"
	}
	if n.InferenceKeys != "" {
		key += "+inference"
	}
	ckey := "home"
	switch {
	case n.OpenCluster:
		ckey = "open"
	case n.ClusterKey != "":
		ckey = "env"
	case n.Join != "":
		ckey = "invite"
	}
	hfToken := "unset"
	if n.HFToken != "" {
		hfToken = "set"
	}
	kernels := n.Engine.Kernels
	if kernels == "" {
		kernels = "best"
	}
	if n.Engine.NoPack {
		kernels += ",unpacked"
	}
	return fmt.Sprintf("name=%s home=%s api=%s api_open=%v metrics_public=%v gossip=%s quic=%s bootstrap=%v mdns=%v offline=%v log=%s/%s threads=%d max_instances=%d max_instances_per_model=%d api_key=%s cluster_key=%s models_dir=%s custom_model_cards_dir=%s hub=%s hf_token=%s kernels=%s http_body_timeout=%s http_idle_timeout=%s max_conns_per_client=%d max_conns=%d memory_budget=%d group_connect_timeout=%s log_free_floor=%s",
		n.NodeName(), n.Home, n.APIAddr, n.APIOpen, n.MetricsPublic, n.GossipAddr, n.QUICAddr, n.BootstrapPeers, !n.NoMDNS, n.Offline, n.LogFormat, n.LogLevel, n.Threads,
		n.MaxInstances, n.MaxInstancesPerModel, key, ckey, orDefault(n.ModelsDir), orDefault(n.CustomModelCardsDir), orDefault(n.HubEndpoint), hfToken, kernels,
		n.HTTPBodyTimeout, n.HTTPIdleTimeout, n.MaxConnsPerClient, n.MaxConns, n.MemoryBudget, n.GroupConnectTimeout, n.logFreeFloor())
}

// logFreeFloor shows the free-space floor setting.
func (n Node) logFreeFloor() string {
	switch n.LogFreeFloor {
	case 0:
		return "default"
	case LogFreeFloorOff:
		return "off"
	}
	return strconv.FormatInt(n.LogFreeFloor, 10)
}

// orDefault shows an unset setting as "default".
func orDefault(v string) string {
	if v == "" {
		return "default"
	}
	return v
}

// DefaultHome is $SKULK_HOME, else $XDG_DATA_HOME/skulk when XDG_DATA_HOME
// is set, else ~/.skulk.
func DefaultHome(getenv func(string) string) string {
	if h := getenv("SKULK_HOME"); h != "" {
		return h
	}
	if x := getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "skulk")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".skulk")
	}
	return ".skulk"
}

// FromEnv fills the fields the environment provides; flags override them.
func FromEnv(getenv func(string) string) Node {
	n := Node{Home: DefaultHome(getenv), APIAddr: DefaultAPIAddr, GossipAddr: DefaultGossipAddr, QUICAddr: DefaultQUICAddr,
		LogFormat: "text", LogLevel: "info", APIKey: getenv("SKULK_API_KEY"), ClusterKey: getenv("SKULK_CLUSTER_KEY"),
		InferenceKeys: getenv("SKULK_INFERENCE_KEYS"), NetworkVersion: getenv("SKULK_NETWORK_VERSION"),
		APIOpen: truthy(getenv("SKULK_API_OPEN")), MetricsPublic: truthy(getenv("SKULK_METRICS_PUBLIC")), MaxInstances: DefaultMaxInstances, MaxInstancesPerModel: DefaultMaxInstancesPerModel,
		HTTPBodyTimeout: DefaultHTTPBodyTimeout, HTTPIdleTimeout: DefaultHTTPIdleTimeout, MaxConnsPerClient: DefaultMaxConnsPerClient, MaxConns: DefaultMaxConns,
		KeepAlive: DefaultKeepAlive}
	var errs []error
	for _, e := range []struct {
		name string
		d    *time.Duration
	}{{"SKULK_HTTP_BODY_TIMEOUT", &n.HTTPBodyTimeout}, {"SKULK_HTTP_IDLE_TIMEOUT", &n.HTTPIdleTimeout}, {"SKULK_GROUP_CONNECT_TIMEOUT", &n.GroupConnectTimeout}, {"SKULK_VOTER_TIMEOUT", &n.VoterTimeout}, {"SKULK_KEEP_ALIVE", &n.KeepAlive}} {
		if v := getenv(e.name); v != "" {
			var err error
			if *e.d, err = time.ParseDuration(v); err != nil {
				errs = append(errs, fmt.Errorf("config: %s=%q must be a duration such as 30s or 2m: %w", e.name, v, err))
			}
		}
	}
	for _, e := range []struct {
		name string
		n    *int
	}{{"SKULK_MAX_CONNS_PER_CLIENT", &n.MaxConnsPerClient}, {"SKULK_MAX_CONNS", &n.MaxConns}} {
		if v := getenv(e.name); v != "" {
			var err error
			if *e.n, err = strconv.Atoi(v); err != nil {
				errs = append(errs, fmt.Errorf("config: %s=%q must be a whole number (0: no limit): %w", e.name, v, err))
			}
		}
	}
	if v := getenv("SKULK_MEMORY_BUDGET"); v != "" {
		var err error
		if n.MemoryBudget, err = ParseBytes(v); err != nil {
			errs = append(errs, fmt.Errorf("config: SKULK_MEMORY_BUDGET=%q: %w", v, err))
		}
	}
	if v := strings.TrimSpace(getenv("SKULK_LOG_FREE_FLOOR")); v != "" {
		switch f, err := strconv.ParseInt(v, 10, 64); {
		case err != nil || f < 0:
			errs = append(errs, fmt.Errorf("config: SKULK_LOG_FREE_FLOOR=%q must be a number of bytes (0 turns the free-space check off; unset: %d or 5%% of a smaller disk)", v, DefaultLogFreeFloor))
		case f == 0:
			n.LogFreeFloor = LogFreeFloorOff
		default:
			n.LogFreeFloor = f
		}
	}
	if p := getenv("SKULK_BOOTSTRAP_PEERS"); p != "" {
		n.BootstrapPeers = SplitList(p)
	}
	if d := getenv("SKULK_IMPORT_DIRS"); d != "" {
		n.ImportDirs = SplitList(d)
	}
	if v := strings.TrimSpace(getenv("SKULK_PORT")); v != "" {
		p, err := strconv.Atoi(v)
		if err == nil {
			err = n.UsePort(p, func(string) bool { return false })
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("config: SKULK_PORT=%q must be a port from 1 to %d: the node listens on it (API) and the two above it (gossip, QUIC)", v, MaxPort))
		}
	}
	if a := getenv("SKULK_API_ADDR"); a != "" { // an address set on its own wins over SKULK_PORT
		n.APIAddr = a
	}
	n.Name = strings.TrimSpace(getenv("SKULK_NAME"))
	n.envErr = errors.Join(errs...)
	n.Offline = truthy(getenv("SKULK_OFFLINE"))
	n.ModelsDir = getenv("SKULK_MODELS_DIR")
	n.CustomModelCardsDir = getenv("SKULK_CUSTOM_MODEL_CARDS_DIR")
	n.HubEndpoint = strings.TrimSpace(getenv("HF_ENDPOINT"))
	n.HFToken = strings.TrimSpace(getenv("HF_TOKEN"))
	var err error
	if n.Engine, err = EngineFromEnv(getenv); err != nil {
		n.envErr = errors.Join(n.envErr, err)
	}
	for _, e := range []struct {
		name string
		dst  *int
	}{{"SKULK_MAX_INSTANCES", &n.MaxInstances}, {"SKULK_MAX_INSTANCES_PER_MODEL", &n.MaxInstancesPerModel}} {
		if v := getenv(e.name); v != "" {
			i, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				n.envErr = errors.Join(n.envErr, fmt.Errorf("config: %s=%q must be a whole number", e.name, v))
				continue
			}
			*e.dst = i
		}
	}
	return n
}

// MaxPort is the highest --port: the node also listens on the two ports
// above it.
const MaxPort = 65533

// UsePort puts the API on port, gossip on port+1 and QUIC on port+2,
// keeping each address's host; it leaves the addresses whose flags kept
// names ("api-addr", "gossip-addr", "quic-addr"): an address given on its
// own wins over the one --port derives.
func (n *Node) UsePort(port int, kept func(flag string) bool) error {
	if port < 1 || port > MaxPort {
		return fmt.Errorf("config: --port %d must be from 1 to %d: the node listens on it (API) and the two ports above it (gossip, QUIC)", port, MaxPort)
	}
	n.Port = port
	for i, a := range []struct {
		flag string
		addr *string
	}{{"api-addr", &n.APIAddr}, {"gossip-addr", &n.GossipAddr}, {"quic-addr", &n.QUICAddr}} {
		if kept(a.flag) {
			continue
		}
		host, _, err := net.SplitHostPort(*a.addr)
		if err != nil {
			host = "0.0.0.0"
		}
		*a.addr = net.JoinHostPort(host, strconv.Itoa(port+i))
	}
	return nil
}

// truthy reads a boolean environment variable: 1, true, yes or on.
func truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// Validate checks the configuration and says how to fix what is wrong.
func (n Node) Validate() error {
	if n.envErr != nil {
		return n.envErr
	}
	if n.Home == "" {
		return fmt.Errorf("config: --home (or SKULK_HOME) must name a directory")
	}
	if n.Name != "" && !ValidName(n.Name) {
		return fmt.Errorf("config: --name (SKULK_NAME) %q must be 1 to %d letters, digits, '.', '_' or '-' (unset: the machine's host name)", n.Name, MaxNameLen)
	}
	if _, _, err := net.SplitHostPort(n.APIAddr); err != nil {
		return fmt.Errorf("config: --api-addr %q must be HOST:PORT (e.g. 0.0.0.0:%d): %v", n.APIAddr, DefaultAPIPort, err)
	}
	if n.Port < 0 || n.Port > MaxPort {
		return fmt.Errorf("config: --port %d must be from 1 to %d: the node listens on it (API) and the two ports above it (gossip, QUIC)", n.Port, MaxPort)
	}
	switch n.LogFormat {
	case "text", "json":
	default:
		return fmt.Errorf("config: --log-format %q must be text or json", n.LogFormat)
	}
	switch n.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("config: --log-level %q must be debug, info, warn or error", n.LogLevel)
	}
	for name, addr := range map[string]string{"--gossip-addr": n.GossipAddr, "--quic-addr": n.QUICAddr} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return fmt.Errorf("config: %s %q must be HOST:PORT: %v", name, addr, err)
		}
	}
	for _, p := range n.BootstrapPeers {
		if _, _, err := net.SplitHostPort(p); err != nil {
			return fmt.Errorf("config: bootstrap peer %q must be HOST:PORT (the peer's gossip address, port %d by default): %v", p, 52416, err)
		}
	}
	if n.OpenCluster && (n.ClusterKey != "" || n.Join != "") {
		return fmt.Errorf("config: --open-cluster uses the public default key; it cannot be combined with SKULK_CLUSTER_KEY or --join")
	}
	if n.Threads < 0 {
		return fmt.Errorf("config: --threads must not be negative")
	}
	if n.MaxInstances < 0 {
		return fmt.Errorf("config: --max-instances (SKULK_MAX_INSTANCES) %d must not be negative; 0 means the default %d", n.MaxInstances, DefaultMaxInstances)
	}
	if n.MaxInstancesPerModel < 0 {
		return fmt.Errorf("config: --max-instances-per-model (SKULK_MAX_INSTANCES_PER_MODEL) %d must not be negative; 0 means the default %d", n.MaxInstancesPerModel, DefaultMaxInstancesPerModel)
	}
	if n.HTTPBodyTimeout < 0 || n.HTTPIdleTimeout < 0 {
		return fmt.Errorf("config: SKULK_HTTP_BODY_TIMEOUT (%s) and SKULK_HTTP_IDLE_TIMEOUT (%s) must not be negative (0 turns the bound off)", n.HTTPBodyTimeout, n.HTTPIdleTimeout)
	}
	if n.VoterTimeout < 0 {
		return fmt.Errorf("config: --voter-timeout (SKULK_VOTER_TIMEOUT) must not be negative (0: 5m)")
	}
	if n.GroupConnectTimeout < 0 {
		return fmt.Errorf("config: --group-connect-timeout (SKULK_GROUP_CONNECT_TIMEOUT) must not be negative (0: %s)", DefaultGroupConnectTimeout)
	}
	if n.MemoryBudget < 0 {
		return fmt.Errorf("config: --memory-budget (SKULK_MEMORY_BUDGET) must not be negative (0: the machine's memory)")
	}
	if n.MaxConnsPerClient < 0 {
		return fmt.Errorf("config: --max-conns-per-client (SKULK_MAX_CONNS_PER_CLIENT) must not be negative, got %d (0: no limit)", n.MaxConnsPerClient)
	}
	if n.MaxConns < 0 {
		return fmt.Errorf("config: --max-conns (SKULK_MAX_CONNS) must not be negative, got %d (0: no limit)", n.MaxConns)
	}
	if n.LogFreeFloor < LogFreeFloorOff {
		return fmt.Errorf("config: the event log's free-space floor %d must be a number of bytes (SKULK_LOG_FREE_FLOOR)", n.LogFreeFloor)
	}
	return nil
}

// MaxNameLen bounds a node's name, as DNS bounds a label.
const MaxNameLen = 63

// ValidName says whether name may be a node's name: 1 to MaxNameLen
// letters, digits, '.', '_' or '-'.
func ValidName(name string) bool {
	if name == "" || len(name) > MaxNameLen {
		return false
	}
	for _, c := range []byte(name) {
		if !nameByte(c) {
			return false
		}
	}
	return true
}

func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// NodeName is the name the node goes by: Name, else the machine's host
// name.
func (n Node) NodeName() string { return n.nodeName(os.Hostname) }

// nodeName is Name, else hostname's first label with any character a name
// may not hold made '-', cut to MaxNameLen; "" when there is neither.
func (n Node) nodeName(hostname func() (string, error)) string {
	if n.Name != "" {
		return n.Name
	}
	h, err := hostname()
	if err != nil {
		return ""
	}
	h, _, _ = strings.Cut(strings.TrimSpace(h), ".")
	b := []byte(h)
	for i, c := range b {
		if !nameByte(c) {
			b[i] = '-'
		}
	}
	if len(b) > MaxNameLen {
		b = b[:MaxNameLen]
	}
	return string(b)
}

// SplitList splits a comma-separated flag value, dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// FormatBytes writes a size as people read it: GiB, MiB or KiB with one
// decimal, or bytes.
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// ParseBytes reads a size: a whole number of bytes, or one with a unit
// (K, M, G, T as powers of 1000; KiB, MiB, GiB, TiB as powers of 1024;
// case-insensitive, "B" optional): "8GiB", "512MiB", "2G", "1500000000".
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	unit = strings.TrimSuffix(unit, "b")
	mult := map[string]float64{"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12,
		"ki": 1 << 10, "mi": 1 << 20, "gi": 1 << 30, "ti": 1 << 40}[unit]
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || mult == 0 || v < 0 {
		return 0, fmt.Errorf("%q is not a size: give bytes, or a number with K, M, G, KiB, MiB or GiB (e.g. 8GiB)", s)
	}
	if v*mult > 1<<62 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(v * mult), nil
}
