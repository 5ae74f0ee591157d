package main

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"text/tabwriter"
)

func runPs(ctx context.Context, args []string, s stdio) error {
	fs := newFlagSet("ps", s)
	host := fs.String("host", DefaultHost, "node API address")
	if err := fs.Parse(args); err != nil {
		return usageError(err)
	}
	st, err := newAPIClient(*host).state(ctx)
	if err != nil {
		return err
	}
	// Above the table, where it is seen: the instances below may not
	// survive a restart.
	for _, w := range st.persistenceWarnings() {
		fmt.Fprintln(s.err, w)
	}
	ids := make([]string, 0, len(st.Instances))
	for id := range st.Instances {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	tw := tabwriter.NewWriter(s.out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTANCE\tMODEL\tSTATUS\tCONTEXT\tPLACEMENT")
	for _, id := range ids {
		in := st.Instances[id]
		var ranks []string
		for _, p := range in.Placement {
			ranks = append(ranks, fmt.Sprintf("%s[%d:%d]", p.Node, p.LayerStart, p.LayerEnd))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", id, in.Model, in.Status, in.ContextTokens, strings.Join(ranks, " "))
	}
	return tw.Flush()
}

func runStop(ctx context.Context, args []string, s stdio) error {
	fs := newFlagSet("stop", s)
	host := fs.String("host", DefaultHost, "node API address")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 1 {
		return &exitError{code: 2, err: fmt.Errorf("usage: skulk stop INSTANCE (see `skulk ps`)")}
	}
	if err := newAPIClient(*host).call(ctx, http.MethodDelete, "/instance/"+pos[0], nil, nil); err != nil {
		return err
	}
	fmt.Fprintf(s.out, "stopped %s\n", pos[0])
	return nil
}
