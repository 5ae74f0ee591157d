// Package homedir is what a node keeps in its home directory besides its
// stores: the lock that keeps a second process off it, the node's id, the
// cluster key (and how a start picks it: the open default, the
// environment, an invite, the home, or a new key) and the gossip
// addresses `skulk cluster invite` names.
package homedir

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/skulk/skulk/internal/platform/ids"
)

// NodeID reads the node's id from its home, minting one on first start.
func NodeID(home string) (ids.NodeID, error) {
	p := filepath.Join(home, "node-id")
	if b, err := os.ReadFile(p); err == nil {
		return ids.ParseNodeID(strings.TrimSpace(string(b)))
	}
	id, err := ids.New[ids.NodeID](rand.Reader)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(p, []byte(string(id)+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("node: write %s: %w", p, err)
	}
	return id, nil
}
