package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/skulk/skulk/internal/platform/config"
	"github.com/skulk/skulk/internal/platform/homedir"
)

func newClusterCmd(s stdio) *cobra.Command {
	c := groupCmd(&cobra.Command{
		Use:     "cluster",
		Short:   "Cluster membership: the invite line that joins a machine, recovery when voters are gone",
		Example: "  skulk cluster invite\n  skulk cluster recover",
	})
	c.AddCommand(newClusterInviteCmd(s), newClusterRecoverCmd(s))
	return c
}

func newClusterRecoverCmd(s stdio) *cobra.Command {
	var host string
	var yes bool
	c := &cobra.Command{
		Use:   "recover",
		Short: "Make this node the only voter when the others are gone for good",
		Long: `Make the node the only voter of the cluster's control plane, so that it can
decide again (place, delete, keys...) when a majority of the voters is gone for
good, as with two machines of which one died.

What it risks: decisions the lost voters committed and this node never
received are lost, and if a lost voter comes back it rejoins as a learner
of this node's history. Refused while a majority of the voters is reachable.`,
		Example: `  skulk cluster recover          # asks for confirmation
  skulk cluster recover --yes`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !yes {
				fmt.Fprint(s.out, "This node becomes the only voter: decisions the lost voters made that it never saw are lost.\nType yes to go on: ")
				line, _ := bufio.NewReader(s.in).ReadString('\n')
				if strings.TrimSpace(line) != "yes" {
					return fmt.Errorf("not recovered (no confirmation)")
				}
			}
			if err := clientFor(cmd, host).call(cmd.Context(), http.MethodPost, "/v1/cluster/recover", nil, nil); err != nil {
				return err
			}
			fmt.Fprintln(s.out, "recovered: this node is the only voter; other machines rejoin as they come back")
			return nil
		},
	}
	addHostFlag(c, &host)
	c.Flags().BoolVar(&yes, "yes", false, "do not ask for confirmation")
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
			line, err := homedir.Invite(cfg, peers, noPeers)
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
