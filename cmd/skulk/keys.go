package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func newKeysCmd(s stdio) *cobra.Command {
	c := groupCmd(&cobra.Command{
		Use:   "keys",
		Short: "The cluster's API keys: add, list and remove them while it runs",
		Long: `The cluster's API keys, changed while it runs: a key added or removed on one
node is in force on every member within seconds, without restarts.

'skulk keys add NAME' has the node generate a key (256 random bits), shares only
its digest with the cluster and prints the key once. An admin key may use every
route; an inference key (--inference) the inference and read-only ones. The
first key of a cluster must be an admin key, and once a key is set every request
needs one, loopback too: save it (--save, or answer the question) in the key file
the skulk commands read (--api-key-file, mode 0600), or export SKULK_API_KEY.

Keys configured in a node's environment (SKULK_API_KEY, SKULK_INFERENCE_KEYS) are
listed with the nodes that set them, and stay until those nodes restart
without them.`,
		Example: `  skulk keys add ops --save          # the first admin key, saved for this machine
  skulk keys add ci --inference      # a key for chat and read-only routes
  skulk keys list
  skulk keys rm ci`,
	})
	c.AddCommand(newKeysAddCmd(s), newKeysListCmd(s), newKeysRmCmd(s))
	return c
}

// addedKey is the answer of POST /v1/keys.
type addedKey struct {
	Name    string `json:"name"`
	Scope   string `json:"scope"`
	Key     string `json:"key"`
	Node    string `json:"node"`
	AddedAt string `json:"added_at"`
}

func newKeysAddCmd(s stdio) *cobra.Command {
	var host, saveTo string
	var inference, save, asJSON bool
	c := &cobra.Command{
		Use:   "add NAME",
		Short: "Generate a key, add it to the cluster and print it once",
		Long: `Generate a key on the node, add it to the cluster (only its digest is shared)
and print it once: it cannot be shown again. NAME is 1 to 64 letters, digits,
'.', '_' or '-'.

An admin key can be saved for the skulk commands on this machine: --save writes
it to the --api-key-file (by default under your config directory) with mode
0600, or --save-to PATH elsewhere; on a terminal, without --save, the command
offers to. An existing file is never replaced.`,
		Example: `  skulk keys add ops --save
  skulk keys add ci --inference
  skulk keys add backup --save-to ~/backup-key
  skulk keys add ci --inference --json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			scope := "admin"
			if inference {
				scope = "inference"
			}
			target := saveTo
			if target == "" {
				target = keyFileOf(cmd).path
			}
			save = save || saveTo != ""
			if save {
				// Refuse before the key exists: it is shown only once.
				if err := checkSavable(target); err != nil {
					return err
				}
			}
			return keysAdd(cmd.Context(), clientFor(cmd, host), s, args[0], scope, target, save, asJSON)
		},
	}
	addHostFlag(c, &host)
	c.Flags().BoolVar(&inference, "inference", false, "an inference key (inference and read-only routes), not an admin key")
	c.Flags().BoolVar(&save, "save", false, "save the key in the --api-key-file (mode 0600) for the skulk commands on this machine")
	c.Flags().StringVar(&saveTo, "save-to", "", "save the key in this file (mode 0600) instead")
	c.Flags().BoolVar(&asJSON, "json", false, `print {"name","scope","key","node","added_at"}`)
	return c
}

func keysAdd(ctx context.Context, c *apiClient, s stdio, name, scope, target string, save, asJSON bool) error {
	var k addedKey
	if err := c.call(ctx, http.MethodPost, "/v1/keys", map[string]string{"name": name, "scope": scope}, &k); err != nil {
		return err
	}
	if asJSON {
		b, _ := json.Marshal(k)
		fmt.Fprintln(s.out, string(b))
	} else {
		fmt.Fprintln(s.out, k.Key)
		fmt.Fprintf(s.err, "added %s key %s: the line above is the key, shown this once; clients send it as \"Authorization: Bearer KEY\"\n", k.Scope, k.Name)
	}
	if !save && k.Scope == "admin" && !asJSON && isTerminal(s.in) && checkSavable(target) == nil {
		fmt.Fprintf(s.err, "Save it in %s (mode 0600), so that the skulk commands on this machine send it? [Y/n] ", target)
		line, _ := bufio.NewReader(s.in).ReadString('\n')
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "", "y", "yes":
			save = true
		}
	}
	if !save {
		return nil
	}
	if err := saveKeyFile(target, k.Key); err != nil {
		return fmt.Errorf("the key was added, but %w; keep the key printed above", err)
	}
	fmt.Fprintf(s.err, "saved in %s (mode 0600): the skulk commands on this machine send it\n", target)
	return nil
}

// keyInfo is one key of GET /v1/keys.
type keyInfo struct {
	Name    string   `json:"name"`
	Scope   string   `json:"scope"`
	Source  string   `json:"source"`
	Nodes   []string `json:"nodes"`
	AddedAt string   `json:"added_at"`
}

func newKeysListCmd(s stdio) *cobra.Command {
	var host string
	var asJSON bool
	c := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the keys in force: name, scope, where each comes from and when it was added",
		Example: "  skulk keys list\n  skulk keys ls --json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return keysList(cmd.Context(), clientFor(cmd, host), s, asJSON)
		},
	}
	addHostFlag(c, &host)
	c.Flags().BoolVar(&asJSON, "json", false, `print {"keys":[{"name","scope","source","nodes","added_at"}]}`)
	return c
}

func keysList(ctx context.Context, c *apiClient, s stdio, asJSON bool) error {
	var raw json.RawMessage
	if err := c.call(ctx, http.MethodGet, "/v1/keys", nil, &raw); err != nil {
		return err
	}
	if asJSON {
		_, err := fmt.Fprintln(s.out, string(raw))
		return err
	}
	var doc struct {
		Keys []keyInfo `json:"keys"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("unexpected /v1/keys answer: %w", err)
	}
	if len(doc.Keys) == 0 {
		fmt.Fprintln(s.err, "no API keys: the nodes serve only clients on their own machines (skulk keys add NAME --save adds one)")
		return nil
	}
	tw := tabwriter.NewWriter(s.out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSCOPE\tSOURCE\tADDED\tNODES")
	for _, k := range doc.Keys {
		source, added := "added at run time", k.AddedAt
		if k.Source != "added" {
			source, added = k.Source+" (environment)", "at the node's start"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.Name, k.Scope, source, added, strings.Join(k.Nodes, ", "))
	}
	return tw.Flush()
}

func newKeysRmCmd(s stdio) *cobra.Command {
	var host string
	c := &cobra.Command{
		Use:     "rm NAME",
		Aliases: []string{"remove"},
		Short:   "Remove a key added at run time: every member refuses it within seconds",
		Long: `Remove a key added with 'skulk keys add': every member refuses it within
seconds. A key configured in a node's environment (SKULK_API_KEY,
SKULK_INFERENCE_KEYS) is removed there, by restarting that node without it. The
last admin key stays while other keys are in force.`,
		Example: "  skulk keys rm ci",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := clientFor(cmd, host).call(cmd.Context(), http.MethodDelete, "/v1/keys/"+url.PathEscape(args[0]), nil, nil); err != nil {
				return err
			}
			_, err := fmt.Fprintf(s.out, "removed key %s\n", args[0])
			return err
		},
	}
	addHostFlag(c, &host)
	return c
}
