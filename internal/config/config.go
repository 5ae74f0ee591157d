// Package config turns flags and environment into one validated node
// configuration. Secrets (the API key) come only from the environment and
// are never printed.
package config

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// Defaults.
const (
	DefaultAPIPort = 52415
	DefaultAPIAddr = "0.0.0.0:52415"
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
}

// String describes the configuration without its secrets.
func (n Node) String() string {
	key := "unset"
	if n.APIKey != "" {
		key = "set"
	}
	return fmt.Sprintf("home=%s api=%s offline=%v log=%s/%s threads=%d api_key=%s", n.Home, n.APIAddr, n.Offline, n.LogFormat, n.LogLevel, n.Threads, key)
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
	n := Node{Home: DefaultHome(getenv), APIAddr: DefaultAPIAddr, LogFormat: "text", LogLevel: "info", APIKey: getenv("SKULK_API_KEY")}
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
	if n.Threads < 0 {
		return fmt.Errorf("config: --threads must not be negative")
	}
	return nil
}
