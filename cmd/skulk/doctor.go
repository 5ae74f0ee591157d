package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/skulk/skulk/internal/platform/config"
	"github.com/skulk/skulk/internal/serving/diagnostics"
)

func newDoctorCmd(s stdio) *cobra.Command {
	cfg := config.FromEnv(os.Getenv)
	var ack, asJSON bool
	var host string
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Check a node and its network, each finding with a fix; acknowledge lost history",
		Long: `Check this machine's node and its network as they need to be for a cluster,
and print each finding with what to do:

  history      the event log in the home lost no history
  cpu          the CPU's features and the engine's kernel set
  memory       total and available memory, and --memory-budget
  disk         free space under the home against the event log's floor
  api          the node answers at --host (SKULK_HOST, default localhost:52415)
  gossip port  52416 (tcp+udp) and 52417 (udp, QUIC): bound by the node, or free
  QUIC port
  cluster key  present (home or SKULK_CLUSTER_KEY) and private (mode 0600)
  peer keys    peers the node refused for another cluster key or network version
  peer NODE    each known node reachable from here on gossip and API (tcp), and
               reachable as the node sees it (gossip and QUIC)
  clock        the peers' clocks against this machine's
  hub          the Hugging Face Hub (or HF_ENDPOINT) answers, unless SKULK_OFFLINE
  mdns         interfaces that can multicast, unless --no-mdns

The cluster checks need the node to answer (SKULK_API_KEY or --api-key-file when a
key is set).
Exit status 1 when a check failed, 0 otherwise (warnings included).

A log damaged in the middle (not just cut short by a crash) is kept aside and
the node starts from its valid part: in a cluster it takes the missing history
back from the master; alone it reports "history lost" in its health until an
operator acknowledges it with --ack-log-loss.`,
		Example: `  skulk doctor
  skulk doctor --json
  skulk doctor --host 10.0.0.5:52415 --no-mdns
  skulk doctor --home /srv/skulk --ack-log-loss`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if ack {
				return ackLogLoss(cfg, s)
			}
			key, _, err := clientKey(keyFileOf(cmd), os.Getenv)
			if err != nil {
				return err
			}
			o := doctorOptions{cfg: cfg, host: resolveHost(host, os.Getenv), apiKey: key,
				dialTimeout: 2 * time.Second, hubTimeout: 3 * time.Second}
			return runDoctor(cmd.Context(), o, asJSON, s)
		},
	}
	c.Flags().StringVar(&cfg.Home, "home", cfg.Home, "the node's home (SKULK_HOME)")
	c.Flags().BoolVar(&ack, "ack-log-loss", false, "acknowledge history the event log lost to damage: the node goes on without it")
	c.Flags().BoolVar(&asJSON, "json", false, `print {"checks":[{"name","status","detail","fix"}]}`)
	c.Flags().BoolVar(&cfg.NoMDNS, "no-mdns", false, "skip the mDNS check (the node runs with --no-mdns)")
	c.Flags().StringVar(&cfg.GossipAddr, "gossip-addr", cfg.GossipAddr, "the node's gossip address, when the node does not answer to say it")
	c.Flags().StringVar(&cfg.QUICAddr, "quic-addr", cfg.QUICAddr, "the node's QUIC address, when the node does not answer to say it")
	addHostFlag(c, &host)
	return c
}

// runDoctor runs the checks and prints them, as text or JSON; a failed
// check is exit status 1.
func runDoctor(ctx context.Context, o doctorOptions, asJSON bool, s stdio) error {
	checks := doctorChecks(gatherFacts(ctx, o))
	if err := printChecks(s.out, checks, asJSON); err != nil {
		return err
	}
	if failed(checks) {
		return &exitError{code: 1, err: errors.New("")}
	}
	return nil
}

// printChecks prints one line per check (its fix indented below it), or
// the JSON document.
func printChecks(w io.Writer, checks []check, asJSON bool) error {
	if asJSON {
		b, err := json.MarshalIndent(struct {
			Checks []check `json:"checks"`
		}{checks}, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	n := map[string]int{}
	for _, c := range checks {
		n[c.Status]++
		fmt.Fprintf(w, "%-4s  %-12s %s\n", c.Status, c.Name, c.Detail)
		if c.Fix != "" {
			fmt.Fprintf(w, "      %-12s fix: %s\n", "", c.Fix)
		}
	}
	_, err := fmt.Fprintf(w, "%d ok, %d %s, %d failed\n", n[statusOK], n[statusWarn], plural(n[statusWarn], "warning", "warnings"), n[statusFail])
	return err
}

// ackLogLoss records the operator's acknowledgement of history the event
// log lost, so the node goes on without it.
func ackLogLoss(cfg config.Node, s stdio) error {
	dir := diagnostics.LogDir(cfg.Home)
	loss, err := diagnostics.AcknowledgeLogLoss(cfg.Home)
	if err != nil {
		return err
	}
	if loss == nil {
		fmt.Fprintf(s.out, "nothing to acknowledge: the event log in %s lost no history\n", dir)
		return nil
	}
	fmt.Fprintf(s.out, "acknowledged: the node goes on without the history after index %d; its health no longer reports it\n", loss.After)
	if loss.Saved != "" {
		fmt.Fprintf(s.out, "the damaged file stays as %s (delete it when you no longer need it)\n", filepath.Join(dir, loss.Saved))
	}
	return nil
}
