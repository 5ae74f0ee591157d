package main

import (
	"context"
	"fmt"
	"net/http"
	"sort"

	"github.com/spf13/cobra"
)

// placeModel places model and waits until it serves, printing progress.
func placeModel(ctx context.Context, c *apiClient, model string, contextTokens int, s stdio) (string, error) {
	return placeModelOn(ctx, c, model, contextTokens, 0, nil, s)
}

// placeModelOn is placeModel across at least minNodes nodes (0: the
// planner's choice), on none of the excluded nodes (ids, unique prefixes
// of ids, or names).
func placeModelOn(ctx context.Context, c *apiClient, model string, contextTokens, minNodes int, excluded []string, s stdio) (string, error) {
	var res struct {
		InstanceID string `json:"instance_id"`
	}
	body := map[string]any{"model_id": model}
	if contextTokens > 0 {
		body["context_tokens"] = contextTokens
	}
	if minNodes > 0 {
		body["min_nodes"] = minNodes
	}
	if len(excluded) > 0 {
		body["excluded_nodes"] = excluded
	}
	if err := c.call(ctx, http.MethodPost, "/place_instance", body, &res); err != nil {
		return "", err
	}
	fmt.Fprintf(s.err, "placing %s as instance %s\n", model, res.InstanceID)
	return res.InstanceID, c.waitReady(ctx, res.InstanceID, model, s.err)
}

// instancesOf lists the instances of model that have not failed, by id.
func instancesOf(st clusterState, model string) []string {
	var ids []string
	for id, in := range st.Instances {
		if in.Model == model && in.Status != "failed" {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

func newPlaceCmd(s stdio) *cobra.Command {
	var host string
	var ctxTokens, replicas, minNodes int
	var excluded []string
	c := &cobra.Command{
		Use:   "place MODEL",
		Short: "Place a model on the cluster and wait until it serves",
		Long: `Place a model on the cluster and wait until it serves; the new instance's id is
printed on standard output. A model that is already placed is not placed again:
--replicas N asks for N instances of it in all, and places the missing ones.`,
		Example: `  skulk place stories260k
  skulk place qwen2.5-0.5b-instruct-q4_k_m --context 8192
  skulk place stories260k --replicas 2          # two instances in all
  skulk place stories260k --exclude laptop      # on any node but the one named laptop`,
		Args:              exactArgs(1),
		ValidArgsFunction: completeModels,
		RunE: func(cmd *cobra.Command, args []string) error {
			if replicas < 0 {
				return usageErrorf("--replicas must be at least 1")
			}
			model, api := args[0], clientFor(cmd, host)
			st, err := api.state(cmd.Context())
			if err != nil {
				return err
			}
			have := instancesOf(st, model)
			want := max(replicas, 1)
			if len(have) >= want {
				if replicas == 0 {
					fmt.Fprintf(s.err, "%s is already placed (instance %s); to run more instances of it, say how many in all: skulk place %s --replicas %d\n",
						model, have[0], model, len(have)+1)
				} else {
					fmt.Fprintf(s.err, "%s already has %d %s\n", model, len(have), plural(len(have), "instance", "instances"))
				}
				for _, id := range have {
					fmt.Fprintln(s.out, id)
				}
				return nil
			}
			for range want - len(have) {
				id, err := placeModelOn(cmd.Context(), api, model, ctxTokens, minNodes, excluded, s)
				if err != nil {
					return err
				}
				fmt.Fprintln(s.out, id)
			}
			return nil
		},
	}
	addHostFlag(c, &host)
	c.Flags().IntVar(&ctxTokens, "context", 0, "context window in tokens (0 = the served default)")
	c.Flags().IntVar(&minNodes, "min-nodes", 0, "split the model by layers across at least `N` nodes (0 = the planner's choice: one node when it fits)")
	c.Flags().StringSliceVar(&excluded, "exclude", nil, "place on none of these `NODE`s: an id, a unique start of one, or a name (skulk nodes lists them); repeat or comma-separate")
	c.Flags().IntVar(&replicas, "replicas", 0, "how many instances of the model in all; the missing ones are placed (default: one, unless placed already)")
	return c
}

// plural is one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
