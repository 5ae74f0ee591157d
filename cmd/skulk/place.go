package main

import (
	"context"
	"fmt"
	"net/http"
)

// placeModel places model and waits until it serves, printing progress.
func placeModel(ctx context.Context, c *apiClient, model string, contextTokens int, s stdio) (string, error) {
	var res struct {
		InstanceID string `json:"instance_id"`
	}
	body := map[string]any{"model_id": model}
	if contextTokens > 0 {
		body["context_tokens"] = contextTokens
	}
	if err := c.call(ctx, http.MethodPost, "/place_instance", body, &res); err != nil {
		return "", err
	}
	fmt.Fprintf(s.err, "placing %s as instance %s\n", model, res.InstanceID)
	return res.InstanceID, c.waitReady(ctx, res.InstanceID, s.err)
}

func runPlace(ctx context.Context, args []string, s stdio) error {
	fs := newFlagSet("place", s)
	host := fs.String("host", DefaultHost, "node API address")
	ctxTokens := fs.Int("context", 0, "context window in tokens (0 = the served default)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) != 1 {
		return &exitError{code: 2, err: fmt.Errorf("usage: skulk place MODEL [--context N] (see `skulk models list`)")}
	}
	id, err := placeModel(ctx, newAPIClient(*host), pos[0], *ctxTokens, s)
	if err != nil {
		return err
	}
	fmt.Fprintln(s.out, id)
	return nil
}
