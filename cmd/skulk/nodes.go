package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func newNodesCmd(s stdio) *cobra.Command {
	var host string
	c := &cobra.Command{
		Use:   "nodes",
		Short: "List the cluster's nodes: name, id, role, address, cores, memory, health, instances",
		Long: `List the nodes of the cluster, one line each: the node's name (its --name, else
its host name), the start of its id, its part in the control plane (leader,
voter or learner), where its API is, its logical cores, its free and total
memory (as --memory-budget caps it), its health and how many instances have
a rank on it. A node that is gone shows as unreachable, with what it last
published.`,
		Example: `  skulk nodes
  skulk nodes --host 10.0.0.5`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			view, err := fetchNodes(cmd.Context(), clientFor(cmd, host))
			if err != nil {
				return err
			}
			return renderNodes(s.out, view)
		},
	}
	addHostFlag(c, &host)
	return c
}

// clusterDiagnostics is the part of GET /v1/diagnostics/cluster that
// skulk nodes reads.
type clusterDiagnostics struct {
	Nodes []struct {
		NodeID         string   `json:"nodeId"`
		Name           string   `json:"name"`
		Reachable      bool     `json:"reachable"`
		Health         string   `json:"health"`
		Gossip         string   `json:"gossipAddr"`
		API            []string `json:"apiAddrs"`
		Cores          int      `json:"cores"`
		TotalBytes     int64    `json:"totalBytes"`
		AvailableBytes int64    `json:"availableBytes"`
	} `json:"nodes"`
	Consensus struct {
		Leader  string `json:"leader"`
		Members []struct {
			Node  string `json:"nodeId"`
			Voter bool   `json:"voter"`
		} `json:"members"`
	} `json:"consensus"`
}

// nodesView is what skulk nodes shows: the diagnostics and the State.
type nodesView struct {
	diag clusterDiagnostics
	st   clusterState
}

func fetchNodes(ctx context.Context, c *apiClient) (nodesView, error) {
	var v nodesView
	if err := c.call(ctx, http.MethodGet, "/v1/diagnostics/cluster", nil, &v.diag); err != nil {
		return v, err
	}
	st, err := c.state(ctx)
	v.st = st
	return v, err
}

// renderNodes writes a line per node, by name and then id.
func renderNodes(w io.Writer, v nodesView) error {
	role := map[string]string{}
	for _, m := range v.diag.Consensus.Members {
		role[m.Node] = "learner"
		if m.Voter {
			role[m.Node] = "voter"
		}
	}
	if l := v.diag.Consensus.Leader; l != "" {
		role[l] = "leader"
	}
	instances := map[string]int{}
	for _, in := range v.st.Instances {
		seen := map[string]bool{}
		for _, p := range in.Placement {
			if !seen[p.Node] {
				seen[p.Node] = true
				instances[p.Node]++
			}
		}
	}
	nodes := v.diag.Nodes
	sort.SliceStable(nodes, func(i, j int) bool {
		if nodes[i].Name != nodes[j].Name {
			return nodes[i].Name < nodes[j].Name
		}
		return nodes[i].NodeID < nodes[j].NodeID
	})
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tID\tROLE\tADDRESS\tCORES\tMEMORY (FREE/TOTAL)\tHEALTH\tINSTANCES")
	for _, n := range nodes {
		name := n.Name
		if name == "" {
			name = "-"
		}
		r := role[n.NodeID]
		if r == "" {
			r = "-"
		}
		addr := n.Gossip
		if len(n.API) > 0 {
			addr = n.API[0]
		}
		if addr == "" {
			addr = "-"
		}
		cores, mem := "-", "-"
		if n.Cores > 0 {
			cores = fmt.Sprint(n.Cores)
		}
		if n.TotalBytes > 0 {
			mem = fmt.Sprintf("%s/%s", gib(n.AvailableBytes), gib(n.TotalBytes))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", name, shortID(n.NodeID), r, addr, cores, mem,
			nodeHealth(v.st, n.NodeID, n.Reachable, n.Health), instances[n.NodeID])
	}
	return tw.Flush()
}

// nodeHealth is a node's health as the State's nodeHealth says it (with
// its reasons), else as the diagnostics do.
func nodeHealth(st clusterState, id string, reachable bool, diag string) string {
	h, ok := st.NodeHealth[id]
	switch {
	case ok && h.Status != "" && h.Status != "ok" && len(h.Reasons) > 0:
		return h.Status + " (" + strings.Join(h.Reasons, ", ") + ")"
	case ok && h.Status != "":
		return h.Status
	case !reachable:
		return "unreachable"
	case diag != "":
		return diag
	}
	return "-"
}

// gib shows bytes in GiB with one decimal.
func gib(b int64) string { return fmt.Sprintf("%.1fGiB", float64(b)/(1<<30)) }
