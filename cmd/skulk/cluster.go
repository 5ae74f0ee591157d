package main

import (
	"context"
	"fmt"
	"os"

	"github.com/skulk/skulk/internal/config"
	"github.com/skulk/skulk/internal/node"
)

func runCluster(ctx context.Context, args []string, s stdio) error {
	if len(args) == 0 || args[0] != "invite" {
		return &exitError{code: 2, err: fmt.Errorf("usage: skulk cluster invite [--home DIR] [--peer HOST:PORT]... [--no-peers]")}
	}
	cfg := config.FromEnv(os.Getenv)
	fs := newFlagSet("cluster invite", s)
	fs.StringVar(&cfg.Home, "home", cfg.Home, "the home of a node of the cluster (SKULK_HOME)")
	var peers []string
	fs.Func("peer", "a member's gossip address HOST:PORT to name in the invite (default: the addresses the node recorded)", func(v string) error {
		peers = append(peers, config.SplitList(v)...)
		return nil
	})
	noPeers := fs.Bool("no-peers", false, "name no peer: the joining node finds the members by mDNS")
	pos, err := parseFlags(fs, args[1:])
	if err != nil {
		return usageError(err)
	}
	if len(pos) > 0 {
		return &exitError{code: 2, err: fmt.Errorf("unexpected argument %q", pos[0])}
	}
	line, err := node.Invite(cfg, peers, *noPeers)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.out, "skulk run --join %s\n", line)
	return nil
}
