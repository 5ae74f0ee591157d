package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/skulk/skulk/internal/config"
	"github.com/skulk/skulk/internal/node"
)

// runDoctor checks a node's home for what keeps it from being whole, and
// with --ack-log-loss records the operator's acknowledgement of history
// the event log lost, so the node goes on without it.
func runDoctor(ctx context.Context, args []string, s stdio) error {
	cfg := config.FromEnv(os.Getenv)
	fs := newFlagSet("doctor", s)
	fs.StringVar(&cfg.Home, "home", cfg.Home, "the node's home (SKULK_HOME)")
	ack := fs.Bool("ack-log-loss", false, "acknowledge history the event log lost to damage: the node goes on without it")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) > 0 {
		return &exitError{code: 2, err: fmt.Errorf("unexpected argument %q (usage: skulk doctor [--home DIR] [--ack-log-loss])", pos[0])}
	}
	dir := node.LogDir(cfg.Home)
	if *ack {
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
