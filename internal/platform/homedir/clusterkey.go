package homedir

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/skulk/skulk/internal/platform/config"
	"github.com/skulk/skulk/internal/platform/transport/clusterkey"
)

// ClusterKeyFile is the file in a node's home that holds the cluster key
// (mode 0600). It is written when the node starts a new cluster or joins one
// with an invite, and read at every later start.
const ClusterKeyFile = "cluster-key"

// Secret is the cluster key a node runs with and where it came from.
type Secret struct {
	Key clusterkey.Key
	// Origin says where the key came from, for the start log (never the
	// key itself): environment, invite, home, generated or open.
	Origin string
	// Peers are the invite's hints of where to find a member.
	Peers []string
}

// ClusterKey picks the node's cluster key: the open-cluster default
// only when the operator asked for it; else SKULK_CLUSTER_KEY; else the
// invite of --join (stored in the home for later starts); else the key the
// home holds; else a new random key, stored in the home, which makes this
// node the first of a new cluster.
func ClusterKey(cfg config.Node, log *slog.Logger) (Secret, error) {
	nv := clusterkey.NetworkVersion
	if cfg.NetworkVersion != "" {
		nv = cfg.NetworkVersion
	}
	path := filepath.Join(cfg.Home, ClusterKeyFile)
	switch {
	case cfg.OpenCluster:
		k, err := clusterkey.Default(nv)
		return Secret{Key: k, Origin: "open"}, err
	case cfg.ClusterKey != "":
		if len(cfg.ClusterKey) < clusterkey.MinSecretLen {
			log.Warn("SKULK_CLUSTER_KEY is short and may be guessed; `skulk cluster invite` on a node started without it prints a generated 256-bit key",
				"min_bytes", clusterkey.MinSecretLen)
		}
		k, err := clusterkey.New(cfg.ClusterKey, nv)
		return Secret{Key: k, Origin: "environment"}, err
	case cfg.Join != "":
		inv, err := clusterkey.ParseInvite(cfg.Join)
		if err != nil {
			return Secret{}, err
		}
		if old, err := readClusterKey(path); err == nil && old != inv.Secret {
			log.Info("the invite names another cluster than the one this home belonged to; the stored cluster key is replaced")
		}
		if err := writeClusterKey(path, inv.Secret); err != nil {
			return Secret{}, err
		}
		k, err := clusterkey.New(inv.Secret, nv)
		return Secret{Key: k, Origin: "invite", Peers: inv.Peers}, err
	}
	secret, err := readClusterKey(path)
	switch {
	case err == nil:
		k, err := clusterkey.New(secret, nv)
		return Secret{Key: k, Origin: "home"}, err
	case !errors.Is(err, fs.ErrNotExist):
		return Secret{}, err
	}
	secret = clusterkey.Generate()
	if err := writeClusterKey(path, secret); err != nil {
		return Secret{}, err
	}
	k, err := clusterkey.New(secret, nv)
	return Secret{Key: k, Origin: "generated"}, err
}

// readClusterKey reads the stored key, tightening the file's mode if another
// user could read it.
func readClusterKey(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(path, 0o600); err != nil {
			return "", fmt.Errorf("node: %s is readable by other users and cannot be made private: %w", path, err)
		}
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("node: %s is empty: delete it to start a new cluster, or rejoin with `skulk run --join INVITE`", path)
	}
	return s, nil
}

// writeClusterKey stores the key with mode 0600, atomically.
func writeClusterKey(path, secret string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".cluster-key-*")
	if err != nil {
		return fmt.Errorf("node: store the cluster key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("node: store the cluster key: %w", err)
	}
	if _, err := tmp.WriteString(secret + "\n"); err != nil {
		tmp.Close()
		return fmt.Errorf("node: store the cluster key: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("node: store the cluster key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("node: store the cluster key: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("node: store the cluster key: %w", err)
	}
	return nil
}
