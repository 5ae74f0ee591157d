package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/skulk/skulk/internal/config"
	"github.com/skulk/skulk/internal/node"
)

func newDoctorCmd(s stdio) *cobra.Command {
	cfg := config.FromEnv(os.Getenv)
	var ack bool
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Check a node's home for lost history; acknowledge a loss to go on without it",
		Long: `Check the event log in a node's home. A log damaged in the middle (not just
cut short by a crash) is kept aside and the node starts from its valid part:
in a cluster it takes the missing history back from the master; alone it
reports "history lost" in its health until an operator acknowledges it here.`,
		Example: `  skulk doctor
  skulk doctor --home /srv/skulk --ack-log-loss`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runDoctor(cfg, ack, s) },
	}
	c.Flags().StringVar(&cfg.Home, "home", cfg.Home, "the node's home (SKULK_HOME)")
	c.Flags().BoolVar(&ack, "ack-log-loss", false, "acknowledge history the event log lost to damage: the node goes on without it")
	return c
}

// runDoctor checks a node's home for what keeps it from being whole, and
// with ack records the operator's acknowledgement of history the event log
// lost, so the node goes on without it.
func runDoctor(cfg config.Node, ack bool, s stdio) error {
	dir := node.LogDir(cfg.Home)
	if ack {
		loss, err := node.AcknowledgeLogLoss(cfg.Home)
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
	loss, err := node.PendingLogLoss(cfg.Home)
	if err != nil {
		return err
	}
	if loss == nil {
		fmt.Fprintf(s.out, "ok: the event log in %s lost no history\n", dir)
		return nil
	}
	fmt.Fprintf(s.out, "the event log in %s lost history after index %d: %v\n", dir, loss.After, loss.Cause)
	if loss.Saved != "" {
		fmt.Fprintf(s.out, "the damaged file is kept as %s\n", filepath.Join(dir, loss.Saved))
	}
	fmt.Fprintln(s.out, "in a cluster the node takes the history back from the master when it follows one; "+
		"to go on without it: skulk doctor --ack-log-loss")
	return &exitError{code: 1, err: fmt.Errorf("history lost after index %d", loss.After)}
}
