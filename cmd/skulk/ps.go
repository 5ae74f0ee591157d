package main

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/skulk/skulk/internal/models/shortname"
)

func newPsCmd(s stdio) *cobra.Command {
	var host string
	c := &cobra.Command{
		Use:   "ps",
		Short: "List placed instances: model, status, context and placement",
		Example: `  skulk ps
  skulk ps --host 10.0.0.5`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := clientFor(cmd, host).state(cmd.Context())
			if err != nil {
				return err
			}
			// Above the table, where it is seen: the instances below may not
			// survive a restart.
			for _, w := range st.persistenceWarnings() {
				fmt.Fprintln(s.err, w)
			}
			return renderPs(s.out, st)
		},
	}
	addHostFlag(c, &host)
	return c
}

// renderPs writes the instances table: a row per instance and, under a
// split one, a row per rank with its node (by name, where the node
// publishes one), runner status and layers.
func renderPs(w io.Writer, st clusterState) error {
	ids := make([]string, 0, len(st.Instances))
	for id := range st.Instances {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	// A node gossip no longer reaches is lost: its ranks serve nothing,
	// whatever their last report said, until the master places them again.
	lost := func(node string) bool { return slices.Contains(st.NodeHealth[node].Reasons, "unreachable") }
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTANCE\tMODEL\tSTATUS\tCONTEXT\tPLACEMENT")
	for _, id := range ids {
		in := st.Instances[id]
		var ranks []string
		status := in.Status
		for _, p := range in.Placement {
			ranks = append(ranks, fmt.Sprintf("%s [%d, %d)", st.nodeLabel(p.Node), p.LayerStart, p.LayerEnd))
			if lost(p.Node) {
				status = "lost"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", id, in.Model, status, in.ContextTokens, strings.Join(ranks, ", "))
		if len(in.Placement) < 2 {
			continue
		}
		for r, p := range in.Placement {
			status, reason := "pending", ""
			if r < len(in.Runners) {
				status, reason = in.Runners[r].Status, in.Runners[r].Reason
			}
			if lost(p.Node) {
				status, reason = "lost", "node unreachable; the instance is placed again"
			}
			layers := fmt.Sprintf("layers [%d, %d)", p.LayerStart, p.LayerEnd)
			if reason != "" {
				layers += ": " + reason
			}
			fmt.Fprintf(tw, "  rank %d\t%s\t%s\t\t%s\n", r, st.nodeLabel(p.Node), status, layers)
		}
	}
	return tw.Flush()
}

func newStopCmd(s stdio) *cobra.Command {
	var host string
	c := &cobra.Command{
		Use:   "stop INSTANCE|MODEL",
		Short: "Stop an instance, or every instance of a model (see 'skulk ps')",
		Long: `Stop an instance: name it by its id, as 'skulk ps' lists it, or by the start
of its id when no other instance's id starts the same way. Name a model to stop
every instance of it (as 'ollama stop MODEL'). Prints each instance stopped.`,
		Example: `  skulk ps                  # find the instance id
  skulk stop 7f3c2a1e
  skulk stop 7f3c           # the start of an id is enough when only one id starts so
  skulk stop stories260k    # every instance of the model`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeInstances,
		RunE: func(cmd *cobra.Command, args []string) error {
			var res struct {
				InstanceID  string   `json:"instance_id"`
				InstanceIDs []string `json:"instance_ids"`
			}
			api := clientFor(cmd, host)
			err := api.call(cmd.Context(), http.MethodDelete, "/instance/"+args[0], nil, &res)
			if err != nil && shortname.IsName(args[0]) {
				// A library name names its model by the catalog's id
				// (qwen3 is qwen3:8b).
				var m modelEntry
				if api.call(cmd.Context(), http.MethodGet, "/models/"+escapeID(args[0]), nil, &m) == nil && m.ID != "" && m.ID != args[0] {
					err = api.call(cmd.Context(), http.MethodDelete, "/instance/"+escapeID(m.ID), nil, &res)
				}
			}
			if err != nil {
				return err
			}
			if len(res.InstanceIDs) == 0 && res.InstanceID != "" { // a node from before prefixes and models
				res.InstanceIDs = []string{res.InstanceID}
			}
			for _, id := range res.InstanceIDs {
				fmt.Fprintf(s.out, "stopped %s\n", id)
			}
			return nil
		},
	}
	addHostFlag(c, &host)
	return c
}

// completeInstances completes an instance id, or the model of instances,
// from the node's State.
func completeInstances(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	host, _ := cmd.Flags().GetString("host")
	st, err := clientFor(cmd, host).state(cmd.Context())
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	var out []cobra.Completion
	models := map[string]int{}
	for id, in := range st.Instances {
		if strings.HasPrefix(id, toComplete) {
			out = append(out, cobra.CompletionWithDesc(id, in.Model+" "+in.Status))
		}
		if strings.HasPrefix(in.Model, toComplete) {
			models[in.Model]++
		}
	}
	for m, n := range models {
		out = append(out, cobra.CompletionWithDesc(m, fmt.Sprintf("every instance of the model (%d)", n)))
	}
	sort.Strings(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeModels completes a model id from the node's catalog.
func completeModels(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return modelCompletions(cmd, toComplete)
}

// completeModelFirst completes a model id as the first argument and
// nothing after it (skulk run MODEL PROMPT).
func completeModelFirst(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return completeModels(cmd, args, toComplete)
}

func modelCompletions(cmd *cobra.Command, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	host, _ := cmd.Flags().GetString("host")
	var doc struct {
		Data []modelEntry `json:"data"`
	}
	if err := clientFor(cmd, host).call(cmd.Context(), http.MethodGet, "/models", nil, &doc); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	var out []cobra.Completion
	for _, m := range doc.Data {
		if strings.HasPrefix(m.ID, toComplete) {
			out = append(out, cobra.CompletionWithDesc(m.ID, m.Name))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
