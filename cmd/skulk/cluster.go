package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/skulk/skulk/internal/config"
	"github.com/skulk/skulk/internal/node"
)

func newClusterCmd(s stdio) *cobra.Command {
	c := groupCmd(&cobra.Command{
		Use:     "cluster",
		Short:   "Cluster membership: print the invite line that joins a machine",
		Example: "  skulk cluster invite",
	})
	c.AddCommand(newClusterInviteCmd(s))
	return c
}

func newClusterInviteCmd(s stdio) *cobra.Command {
	cfg := config.FromEnv(os.Getenv)
	var peers []string
	var noPeers bool
	c := &cobra.Command{
		Use:   "invite",
		Short: "Print the line that adds another machine to this node's cluster",
		Long: `Print the 'skulk run --join …' line that adds another machine to the cluster of
the node whose home this is. The line carries the cluster key: share it like a
password.`,
		Example: `  skulk cluster invite                          # on any member
  skulk cluster invite --no-peers               # the joining node finds members by mDNS
  skulk cluster invite --peer 10.0.0.5:52416`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			line, err := node.Invite(cfg, peers, noPeers)
			if err != nil {
				return err
			}
			fmt.Fprintf(s.out, "skulk run --join %s\n", line)
			return nil
		},
	}
	c.Flags().StringVar(&cfg.Home, "home", cfg.Home, "the home of a node of the cluster (SKULK_HOME)")
	c.Flags().Func("peer", "a member's gossip address `HOST:PORT` to name in the invite (default: the addresses the node recorded)", func(v string) error {
		peers = append(peers, config.SplitList(v)...)
		return nil
	})
	c.Flags().BoolVar(&noPeers, "no-peers", false, "name no peer: the joining node finds the members by mDNS")
	return c
}
