// Package config turns flags and environment into one validated node
// configuration. Secrets (the API key) come only from the environment and
// are never printed.
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

	// DefaultHTTPBodyTimeout bounds how long a request body may take to
	// arrive; DefaultHTTPIdleTimeout how long a keep-alive connection may
	// sit idle; DefaultMaxConnsPerClient how many connections one client
	// address may hold open.
	DefaultHTTPBodyTimeout   = 30 * time.Second
	DefaultHTTPIdleTimeout   = 120 * time.Second
	DefaultMaxConnsPerClient = 64
)

// Node is the configuration of `skulk run`.
type Node struct {
	Home      string // state directory: event log, node id, model cache
	APIAddr   string // host:port of the HTTP API
	Offline   bool   // never touch the network for models
	LogFormat string // text or json
	LogLevel  string // debug, info, warn, error
	Threads   int    // engine threads per runner (0 = physical cores)
	APIKey    string `json:"-"` // SKULK_API_KEY: required bearer token when set

	// Bounds on what one HTTP client can hold (0 turns a bound off).
	HTTPBodyTimeout   time.Duration // SKULK_HTTP_BODY_TIMEOUT: a request body must arrive within it
	HTTPIdleTimeout   time.Duration // SKULK_HTTP_IDLE_TIMEOUT: keep-alive connections idle longer are closed
	MaxConnsPerClient int           // --max-conns-per-client, SKULK_MAX_CONNS_PER_CLIENT: open API connections per client IP

	// Cluster.
	GossipAddr     string   // membership (SWIM gossip) HOST:PORT
	QUICAddr       string   // transport endpoint HOST:PORT
	BootstrapPeers []string // gossip addresses to join; empty relies on mDNS
	NoMDNS         bool     // do not discover peers by mDNS
	// ClusterKey (SKULK_CLUSTER_KEY) admits nodes to the cluster; empty
	// uses the zero-config default derived from the network version.
	ClusterKey string `json:"-"`
	// NetworkVersion (SKULK_NETWORK_VERSION) overrides the wire version;
	// nodes of different versions refuse each other. For tests and staged
	// upgrades only.
	NetworkVersion string

	envErr error // a malformed environment variable, reported by Validate
}

// String describes the configuration without its secrets.
func (n Node) String() string {
	key := "unset"
	if n.APIKey != "" {
		key = "set"
	}
	ckey := "default"
	if n.ClusterKey != "" {
		ckey = "set"
	}
	return fmt.Sprintf("home=%s api=%s gossip=%s quic=%s bootstrap=%v mdns=%v offline=%v log=%s/%s threads=%d api_key=%s cluster_key=%s http_body_timeout=%s http_idle_timeout=%s max_conns_per_client=%d",
		n.Home, n.APIAddr, n.GossipAddr, n.QUICAddr, n.BootstrapPeers, !n.NoMDNS, n.Offline, n.LogFormat, n.LogLevel, n.Threads, key, ckey,
		n.HTTPBodyTimeout, n.HTTPIdleTimeout, n.MaxConnsPerClient)
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
		NetworkVersion: getenv("SKULK_NETWORK_VERSION"), HTTPBodyTimeout: DefaultHTTPBodyTimeout,
		HTTPIdleTimeout: DefaultHTTPIdleTimeout, MaxConnsPerClient: DefaultMaxConnsPerClient}
	var errs []error
	for _, e := range []struct {
		name string
		d    *time.Duration
	}{{"SKULK_HTTP_BODY_TIMEOUT", &n.HTTPBodyTimeout}, {"SKULK_HTTP_IDLE_TIMEOUT", &n.HTTPIdleTimeout}} {
		if v := getenv(e.name); v != "" {
			var err error
			if *e.d, err = time.ParseDuration(v); err != nil {
				errs = append(errs, fmt.Errorf("config: %s=%q must be a duration such as 30s or 2m: %w", e.name, v, err))
			}
		}
	}
	if v := getenv("SKULK_MAX_CONNS_PER_CLIENT"); v != "" {
		var err error
		if n.MaxConnsPerClient, err = strconv.Atoi(v); err != nil {
			errs = append(errs, fmt.Errorf("config: SKULK_MAX_CONNS_PER_CLIENT=%q must be a whole number (0: no limit): %w", v, err))
		}
	}
	n.envErr = errors.Join(errs...)
	if p := getenv("SKULK_BOOTSTRAP_PEERS"); p != "" {
		n.BootstrapPeers = SplitList(p)
	}
	if a := getenv("SKULK_API_ADDR"); a != "" {
		n.APIAddr = a
	}
	if o := getenv("SKULK_OFFLINE"); o == "1" || strings.EqualFold(o, "true") {
		n.Offline = true
	}
	return n
}

// Validate checks the configuration and says how to fix what is wrong.
func (n Node) Validate() error {
	if n.envErr != nil {
		return n.envErr
	}
	if n.Home == "" {
		return fmt.Errorf("config: --home (or SKULK_HOME) must name a directory")
	}
	if _, _, err := net.SplitHostPort(n.APIAddr); err != nil {
		return fmt.Errorf("config: --api-addr %q must be HOST:PORT (e.g. 0.0.0.0:%d): %v", n.APIAddr, DefaultAPIPort, err)
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
	if n.Threads < 0 {
		return fmt.Errorf("config: --threads must not be negative")
	}
	if n.HTTPBodyTimeout < 0 || n.HTTPIdleTimeout < 0 {
		return fmt.Errorf("config: SKULK_HTTP_BODY_TIMEOUT (%s) and SKULK_HTTP_IDLE_TIMEOUT (%s) must not be negative (0 turns the bound off)", n.HTTPBodyTimeout, n.HTTPIdleTimeout)
	}
	if n.MaxConnsPerClient < 0 {
		return fmt.Errorf("config: --max-conns-per-client (SKULK_MAX_CONNS_PER_CLIENT) must not be negative, got %d (0: no limit)", n.MaxConnsPerClient)
	}
	return nil
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
