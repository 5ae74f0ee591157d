package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"text/tabwriter"
)

func runModels(ctx context.Context, args []string, s stdio) error {
	if len(args) == 0 || args[0] != "list" {
		return &exitError{code: 2, err: fmt.Errorf("usage: skulk models list [--host HOST]")}
	}
	fs := newFlagSet("models list", s)
	host := fs.String("host", DefaultHost, "node API address")
	asJSON := fs.Bool("json", false, "print the catalog as JSON")
	if err := fs.Parse(args[1:]); err != nil {
		return usageError(err)
	}
	var raw json.RawMessage
	if err := newAPIClient(*host).call(ctx, http.MethodGet, "/models", nil, &raw); err != nil {
		return err
	}
	if *asJSON {
		_, err := fmt.Fprintln(s.out, string(raw))
		return err
	}
	var doc struct {
		Data []struct {
			ID           string `json:"model_id"`
			Name         string `json:"name"`
			StorageBytes int64  `json:"storage_bytes"`
			Placement    string `json:"placement"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("unexpected /models answer: %w", err)
	}
	tw := tabwriter.NewWriter(s.out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tSIZE\tPLACEMENT\tNAME")
	for _, m := range doc.Data {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.ID, humanBytes(m.StorageBytes), m.Placement, m.Name)
	}
	return tw.Flush()
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
