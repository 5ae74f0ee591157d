package homedir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/skulk/skulk/internal/platform/config"
	"github.com/skulk/skulk/internal/platform/transport/clusterkey"
)

// peerHintsFile lists the node's gossip addresses (one per line, public
// information), written at every start so that `skulk cluster invite` can
// name where to find this node without asking it.
const peerHintsFile = "gossip-addrs"

// WritePeerHints records the node's gossip addresses for `skulk cluster
// invite`.
func WritePeerHints(home string, addrs []netip.AddrPort) error {
	var b strings.Builder
	for _, a := range addrs {
		b.WriteString(a.String() + "\n")
	}
	return os.WriteFile(filepath.Join(home, peerHintsFile), []byte(b.String()), 0o644)
}

// PrintNewCluster tells the operator of a new cluster how to add machines.
// It goes to the console, never to the log: the line carries the key.
func PrintNewCluster(w io.Writer, key clusterkey.Key, addrs []netip.AddrPort) {
	fmt.Fprintf(w, "\nThis node started a new Skulk cluster. To add a machine, run there:\n\n    skulk run --join %s\n\n"+
		"The line carries the cluster's secret key: share it only with machines you trust. `skulk cluster invite` prints it again.\n\n",
		invite(key, addrs))
}

func invite(key clusterkey.Key, addrs []netip.AddrPort) string {
	var peers []string
	for _, a := range addrs {
		peers = append(peers, a.String())
	}
	return clusterkey.Invite{Secret: key.Secret(), Peers: peers}.String()
}

// Invite returns the invite line of the cluster the node with this
// configuration belongs to: its cluster key (SKULK_CLUSTER_KEY, else the
// home's) and, unless noPeers, the gossip addresses the node recorded at its
// last start (or the peers given).
func Invite(cfg config.Node, peers []string, noPeers bool) (string, error) {
	if cfg.OpenCluster {
		return "", errors.New("an open cluster has no secret: any node started with --open-cluster joins it")
	}
	secret := cfg.ClusterKey
	if secret == "" {
		s, err := readClusterKey(filepath.Join(cfg.Home, ClusterKeyFile))
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("no cluster key in %s: start the node once with `skulk run` (it creates the cluster), or pass --home", cfg.Home)
		}
		if err != nil {
			return "", err
		}
		secret = s
	}
	if !noPeers && len(peers) == 0 {
		b, err := os.ReadFile(filepath.Join(cfg.Home, peerHintsFile))
		if err == nil {
			for _, l := range strings.Fields(string(b)) {
				peers = append(peers, l)
			}
		}
	}
	if noPeers {
		peers = nil
	}
	return clusterkey.Invite{Secret: secret, Peers: peers}.String(), nil
}
