package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/skulk/skulk/internal/platform/config"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/skulk/skulk/internal/models/shortname"
)

// pullPoll is how often `skulk models pull` asks the node for progress.
const pullPoll = 250 * time.Millisecond

func newModelsCmd(s stdio) *cobra.Command {
	c := groupCmd(&cobra.Command{
		Use:   "models",
		Short: "The model catalog: list, add, pull, import, show, rm",
		Long: `The model catalog the cluster serves from: the built-in demo model, models added
from the Hugging Face Hub (by a short name of the library, such as qwen3:8b, or
by repository), and imported GGUF files. The common ones are top-level commands
too: skulk list (ls), pull, show, rm.`,
		Example: `  skulk models list
  skulk models list --library                   # the short names pull takes
  skulk models pull qwen3:8b                    # add from the library and download
  skulk models add hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF
  skulk models pull qwen2.5-0.5b-instruct-q4_k_m
  skulk models import ./my-model.gguf --id my-model
  skulk models show my-model
  skulk models rm my-model --files`,
	})
	c.AddCommand(newModelsListCmd(s, "list"), newModelsAddCmd(s), newModelsPullCmd(s, "pull"),
		newModelsImportCmd(s), newModelsShowCmd(s, "show"), newModelsRmCmd(s, "rm"))
	return c
}

// The top-level aliases of the models subcommands, as Ollama has them.
func newListCmd(s stdio) *cobra.Command { return newModelsListCmd(s, "list") }
func newPullCmd(s stdio) *cobra.Command { return newModelsPullCmd(s, "pull") }
func newShowCmd(s stdio) *cobra.Command { return newModelsShowCmd(s, "show") }
func newRmCmd(s stdio) *cobra.Command   { return newModelsRmCmd(s, "rm") }

// modelEntry is the part of a GET /models entry the commands print.
type modelEntry struct {
	ID           string   `json:"model_id"`
	Name         string   `json:"name"`
	Repo         string   `json:"source_repository"`
	Revision     string   `json:"source_revision"`
	Files        []string `json:"files"`
	Builtin      bool     `json:"builtin"`
	Arch         string   `json:"architecture"`
	Layers       int      `json:"layers"`
	Context      int      `json:"context_length"`
	StorageBytes int64    `json:"storage_bytes"`
	Placement    string   `json:"placement"`
	Instances    []string `json:"instances"`
	Installed    bool     `json:"installed"`
	Reason       string   `json:"reason"`
	HeldBy       []string `json:"held_by"`
	Download     *struct {
		State      string `json:"state"`
		File       string `json:"file"`
		DoneBytes  int64  `json:"done_bytes"`
		TotalBytes int64  `json:"total_bytes"`
		Error      string `json:"error"`
	} `json:"download"`
}

func newModelsListCmd(s stdio, use string) *cobra.Command {
	var host string
	var asJSON, library bool
	cmd := &cobra.Command{
		Use:     use,
		Aliases: []string{"ls"},
		Short:   "List the catalog, with placement and the node's copy of each model",
		Long: `List the catalog, with each model's placement and the node's copy of it. With
--library, list instead the short names of the library that 'skulk pull' takes
(qwen3:8b, gemma3:4b, …), with their sizes and whether the node has them; a bare
family name (qwen3) means the tag marked default.`,
		Example: "  skulk models list\n  skulk ls --json\n  skulk list --library",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if library {
				return modelsLibrary(cmd.Context(), clientFor(cmd, host), asJSON, s)
			}
			return modelsList(cmd.Context(), clientFor(cmd, host), asJSON, s)
		},
	}
	addHostFlag(cmd, &host)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the catalog (or the library) as JSON")
	cmd.Flags().BoolVar(&library, "library", false, "list the short names 'skulk pull' takes instead of the catalog")
	return cmd
}

// libraryEntry is the part of a GET /models/library entry the command prints.
type libraryEntry struct {
	Name        string `json:"name"`
	Default     bool   `json:"default"`
	Repo        string `json:"repo"`
	File        string `json:"file"`
	Size        int64  `json:"size_bytes"`
	Description string `json:"description"`
	InCatalog   bool   `json:"in_catalog"`
	ModelID     string `json:"model_id"`
	Installed   bool   `json:"installed"`
}

func modelsLibrary(ctx context.Context, c *apiClient, asJSON bool, s stdio) error {
	var raw json.RawMessage
	if err := c.call(ctx, http.MethodGet, "/models/library", nil, &raw); err != nil {
		return err
	}
	if asJSON {
		_, err := fmt.Fprintln(s.out, string(raw))
		return err
	}
	var doc struct {
		Data []libraryEntry `json:"data"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("unexpected /models/library answer: %w", err)
	}
	return renderLibrary(s.out, doc.Data)
}

// renderLibrary writes the library table: a row per name, the default
// tag of each family marked, and what the node has of it (--json has the
// repositories and files).
func renderLibrary(w io.Writer, entries []libraryEntry) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSIZE\tLOCAL\tDESCRIPTION")
	for _, e := range entries {
		name := e.Name
		if e.Default {
			name += " *"
		}
		local := ""
		switch {
		case e.Installed:
			local = "installed"
		case e.InCatalog:
			local = "in catalog"
		}
		if e.ModelID != "" && e.ModelID != e.Name {
			local += " as " + e.ModelID
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, config.FormatBytes(e.Size), local, e.Description)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "* the tag a bare name means (qwen3 is the qwen3 marked *); skulk pull NAME downloads one")
	return err
}

func modelsList(ctx context.Context, c *apiClient, asJSON bool, s stdio) error {
	var raw json.RawMessage
	if err := c.call(ctx, http.MethodGet, "/models", nil, &raw); err != nil {
		return err
	}
	if asJSON {
		_, err := fmt.Fprintln(s.out, string(raw))
		return err
	}
	var doc struct {
		Data []modelEntry `json:"data"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("unexpected /models answer: %w", err)
	}
	tw := tabwriter.NewWriter(s.out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tSIZE\tPLACEMENT\tLOCAL\tNAME")
	for _, m := range doc.Data {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.ID, config.FormatBytes(m.StorageBytes), m.Placement, localState(m), m.Name)
	}
	return tw.Flush()
}

// localState says in a word or two whether the node has a model's weights.
func localState(m modelEntry) string {
	switch {
	case m.Builtin:
		return "built-in"
	case m.Installed:
		return "installed"
	case m.Download != nil && m.Download.State == "downloading":
		return fmt.Sprintf("downloading %d%%", percent(m.Download.DoneBytes, m.Download.TotalBytes))
	case strings.HasPrefix(m.Reason, "no complete download"):
		return "not downloaded"
	}
	return "not installed"
}

func newModelsAddCmd(s stdio) *cobra.Command {
	var host, id string
	cmd := &cobra.Command{
		Use:   "add REF",
		Short: "Add a model from the Hugging Face Hub: a library name (qwen3:8b) or hf:OWNER/REPO[/FILE.gguf][@REVISION]",
		Long: `Add a model from the Hugging Face Hub to the catalog: by a short name of the
library ('skulk list --library'), which becomes the model's id, or by repository.
The node pins the commit and reads only the GGUF header; without a file it picks a
quantization (Q4_K_M first). The weights download when the model is placed, or on
'skulk pull'.`,
		Example: `  skulk models add qwen3:8b
  skulk models add hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF
  skulk models add hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q8_0.gguf --id qwen-q8`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return modelsAdd(cmd.Context(), clientFor(cmd, host), args, id, s)
		},
	}
	addHostFlag(cmd, &host)
	cmd.Flags().StringVar(&id, "id", "", "model id (default: the library name, or the file name lower-cased without .gguf)")
	return cmd
}

func modelsAdd(ctx context.Context, c *apiClient, pos []string, id string, s stdio) error {
	var res struct {
		ModelID  string     `json:"model_id"`
		CardFile string     `json:"card_file"`
		Card     modelEntry `json:"card"`
	}
	if err := c.call(ctx, http.MethodPost, "/models/add", map[string]string{"ref": pos[0], "id": id}, &res); err != nil {
		return err
	}
	fmt.Fprintf(s.out, "added %s: %s@%s %s (%s, %s)\n", res.ModelID, res.Card.Repo, res.Card.Revision,
		strings.Join(res.Card.Files, ","), config.FormatBytes(res.Card.StorageBytes), layers(res.Card.Layers))
	fmt.Fprintf(s.out, "weights download when the model is placed, or now: skulk models pull %s\n", res.ModelID)
	return nil
}

func newModelsPullCmd(s stdio, use string) *cobra.Command {
	var host string
	cmd := &cobra.Command{
		Use:   use + " MODEL",
		Short: "Download a model's weights onto the node now, with a progress bar",
		Long: `Download a model's weights onto the node now, with a progress bar. MODEL is a
model of the catalog, or a short name of the library ('skulk list --library'),
which is added to the catalog first, pinned to the repository's commit; a bare
family name (qwen3) means its default tag.`,
		Example:           "  skulk pull qwen3:8b\n  skulk pull gemma3\n  skulk pull qwen2.5-0.5b-instruct-q4_k_m",
		Args:              exactArgs(1),
		ValidArgsFunction: completeModels,
		RunE: func(cmd *cobra.Command, args []string) error {
			return modelsPull(cmd.Context(), clientFor(cmd, host), args[0], s)
		},
	}
	addHostFlag(cmd, &host)
	return cmd
}

func modelsPull(ctx context.Context, c *apiClient, name string, s stdio) error {
	_, err := pullModel(ctx, c, name, s.out)
	return err
}

// pullModel pulls a model (adding a library name to the catalog first),
// draws the download's progress on w, and returns the model's catalog id.
func pullModel(ctx context.Context, c *apiClient, name string, w io.Writer) (string, error) {
	var res struct {
		ModelID string `json:"model_id"`
		Added   bool   `json:"added"`
	}
	if err := c.call(ctx, http.MethodPost, "/models/pull", map[string]string{"model_id": name}, &res); err != nil {
		return "", err
	}
	id := res.ModelID
	if id == "" { // a node from before library names
		id = name
	}
	if res.Added {
		fmt.Fprintf(w, "added %s to the catalog\n", id)
	}
	return id, followDownload(ctx, c, id, stdio{out: w})
}

// followDownload draws a model's download on this node until it ends.
func followDownload(ctx context.Context, c *apiClient, id string, s stdio) error {
	bar := &progressLine{w: s.out}
	for {
		var m modelEntry
		if err := c.call(ctx, http.MethodGet, "/models/"+escapeID(id), nil, &m); err != nil {
			bar.end()
			return err
		}
		d := m.Download
		switch {
		case m.Installed || (d != nil && d.State == "done"):
			total := m.StorageBytes
			if d != nil && d.TotalBytes > 0 {
				total = d.TotalBytes
			}
			bar.show(total, total, "")
			bar.end()
			fmt.Fprintf(s.out, "%s is installed\n", id)
			return nil
		case d == nil:
		case d.State == "failed" || d.State == "stopped":
			bar.end()
			return fmt.Errorf("download of %s %s: %s", id, d.State, d.Error)
		default:
			bar.show(d.DoneBytes, d.TotalBytes, d.File)
		}
		select {
		case <-ctx.Done():
			bar.end()
			return fmt.Errorf("stopped waiting; the node goes on downloading %s (skulk models show %s)", id, id)
		case <-time.After(pullPoll):
		}
	}
}

// resolveModel returns the catalog id of the model name names, as the
// node resolves it (a library name's: qwen3 is qwen3:8b). A library name
// the catalog does not hold yet is pulled first, its progress drawn on w, as
// 'ollama run' pulls. Other names come back unchanged: the node's answer to
// using one says what is wrong.
func resolveModel(ctx context.Context, c *apiClient, name string, w io.Writer) (string, error) {
	var m modelEntry
	err := c.call(ctx, http.MethodGet, "/models/"+escapeID(name), nil, &m)
	if err == nil && m.ID != "" {
		return m.ID, nil
	}
	var ae *apiError
	if err == nil || !errors.As(err, &ae) || ae.Status != http.StatusNotFound || !shortname.IsName(name) {
		return name, nil
	}
	return pullModel(ctx, c, name, w)
}

// progressLine redraws one line of download progress in place.
type progressLine struct {
	w     io.Writer
	drawn bool
	last  string
}

func (p *progressLine) show(done, total int64, file string) {
	line := progressBar(done, total, 30)
	if file != "" {
		line += "  " + file
	}
	if line == p.last {
		return
	}
	fmt.Fprintf(p.w, "\r%s", line)
	if n := len(p.last) - len(line); n > 0 {
		fmt.Fprint(p.w, strings.Repeat(" ", n))
	}
	p.drawn, p.last = true, line
}

func (p *progressLine) end() {
	if p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}

// progressBar renders "[#####-----]  50%  1.0 MiB / 2.0 MiB" in width cells.
func progressBar(done, total int64, width int) string {
	pct := percent(done, total)
	fill := pct * width / 100
	return fmt.Sprintf("[%s%s] %3d%%  %s / %s", strings.Repeat("#", fill), strings.Repeat("-", width-fill), pct, config.FormatBytes(done), config.FormatBytes(total))
}

// percent is done/total in whole percent, within 0..100.
func percent(done, total int64) int {
	if total <= 0 {
		return 0
	}
	return int(min(max(done, 0)*100/total, 100))
}

func newModelsImportCmd(s stdio) *cobra.Command {
	var host, id string
	var upload bool
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Install a GGUF file: read by the node where it can, else uploaded to it",
		Long: `Install a GGUF file. A node on this machine reads it in place when it lies under
its import directories: ~/.skulk/models/import/ for any client, and the home
directory of the user running the node for a client on the same machine (see
--import-dir of 'skulk serve'). Otherwise (a node on another machine, a path
outside those directories, or --upload) the file is uploaded to the node: hashed
here, streamed with a progress bar, verified by its SHA-256 there, and resumed
where it stopped when the command runs again.`,
		Example: "  skulk models import ./my-model.gguf --id my-model\n  skulk models import ~/Downloads/model.gguf --host node2 --upload",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return modelsImport(cmd.Context(), clientFor(cmd, host), args, id, upload, s)
		},
	}
	addHostFlag(cmd, &host)
	cmd.Flags().StringVar(&id, "id", "", "model id (default: the file name, lower-cased, without .gguf)")
	cmd.Flags().BoolVar(&upload, "upload", false, "upload the file even when the node could read it in place")
	return cmd
}

// importResult is the answer of an import, by path or by upload.
type importResult struct {
	ModelID string     `json:"model_id"`
	Card    modelEntry `json:"card"`
}

func modelsImport(ctx context.Context, c *apiClient, pos []string, id string, upload bool, s stdio) error {
	// A relative path means the client's working directory, which is the
	// node's only when both run on one machine.
	path, err := filepath.Abs(pos[0])
	if err != nil {
		return err
	}
	if !upload && c.onLoopback() {
		var res importResult
		err := c.call(ctx, http.MethodPost, "/models/import", map[string]string{"path": path, "id": id}, &res)
		if err == nil {
			fmt.Fprintf(s.out, "imported %s from %s (%s, %s, %s)\n", res.ModelID, path, res.Card.Arch, config.FormatBytes(res.Card.StorageBytes), layers(res.Card.Layers))
			return nil
		}
		if ae, ok := errors.AsType[*apiError](err); !ok || ae.Status != http.StatusNotFound || !uploadable(path) {
			return err
		}
		// The node cannot read the path (outside its import directories),
		// and this machine can: the file goes to it.
	}
	res, err := uploadImport(ctx, c, path, id, s)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.out, "imported %s from %s by upload (%s, %s, %s)\n", res.ModelID, path, res.Card.Arch, config.FormatBytes(res.Card.StorageBytes), layers(res.Card.Layers))
	return nil
}

// uploadable reports whether path is a GGUF file here that an upload could
// send: a readable regular file named *.gguf.
func uploadable(path string) bool {
	if !strings.HasSuffix(strings.ToLower(path), ".gguf") {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	return err == nil && fi.Mode().IsRegular()
}

// onLoopback reports whether the node's address is on this machine's
// loopback, where a path of this machine is one of the node's too.
func (c *apiClient) onLoopback() bool {
	u, err := url.Parse(c.base)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func newModelsRmCmd(s stdio, use string) *cobra.Command {
	var host string
	var files bool
	cmd := &cobra.Command{
		Use:               use + " MODEL",
		Short:             "Remove a model's card (and, with --files, its downloaded weights)",
		Example:           "  skulk rm my-model\n  skulk models rm my-model --files",
		Args:              exactArgs(1),
		ValidArgsFunction: completeModels,
		RunE: func(cmd *cobra.Command, args []string) error {
			return modelsRm(cmd.Context(), clientFor(cmd, host), args, files, s)
		},
	}
	addHostFlag(cmd, &host)
	cmd.Flags().BoolVar(&files, "files", false, "also delete the model's downloaded weights on the node")
	return cmd
}

func modelsRm(ctx context.Context, c *apiClient, pos []string, files bool, s stdio) error {
	var res struct {
		RemovedCard        bool `json:"removed_card"`
		RemovedArtifacts   int  `json:"removed_artifacts"`
		RemovedFromCluster bool `json:"removed_from_cluster"`
		StillInCatalog     bool `json:"still_in_catalog"`
	}
	path := "/models/" + escapeID(pos[0])
	if files {
		path += "?files=true"
	}
	if err := c.call(ctx, http.MethodDelete, path, nil, &res); err != nil {
		return err
	}
	var done []string
	switch {
	case res.RemovedCard:
		done = append(done, "its card")
	case res.RemovedFromCluster: // a card another node added or imported
		done = append(done, "its card from the cluster's catalog")
	}
	if res.RemovedArtifacts > 0 {
		done = append(done, fmt.Sprintf("%d downloaded %s", res.RemovedArtifacts, plural(res.RemovedArtifacts, "copy", "copies")))
	}
	fmt.Fprintf(s.out, "removed %s of %s\n", strings.Join(done, " and "), pos[0])
	if res.StillInCatalog {
		fmt.Fprintf(s.out, "%s stays in the catalog from its installed files; remove them with: skulk models rm %s --files\n", pos[0], pos[0])
	}
	return nil
}

func newModelsShowCmd(s stdio, use string) *cobra.Command {
	var host string
	var asJSON bool
	cmd := &cobra.Command{
		Use:               use + " MODEL",
		Short:             "Show one model: card, local copy (or why not), download, instances",
		Example:           "  skulk show stories260k\n  skulk models show stories260k --json",
		Args:              exactArgs(1),
		ValidArgsFunction: completeModels,
		RunE: func(cmd *cobra.Command, args []string) error {
			return modelsShow(cmd.Context(), clientFor(cmd, host), args, asJSON, s)
		},
	}
	addHostFlag(cmd, &host)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the model as JSON")
	return cmd
}

func modelsShow(ctx context.Context, c *apiClient, pos []string, asJSON bool, s stdio) error {
	var raw json.RawMessage
	if err := c.call(ctx, http.MethodGet, "/models/"+escapeID(pos[0]), nil, &raw); err != nil {
		return err
	}
	if asJSON {
		_, err := fmt.Fprintln(s.out, string(raw))
		return err
	}
	var m modelEntry
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("unexpected /models answer: %w", err)
	}
	tw := tabwriter.NewWriter(s.out, 2, 4, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("model", m.ID)
	row("name", m.Name)
	switch {
	case m.Builtin:
		row("source", "built in")
	case m.Repo != "":
		row("source", fmt.Sprintf("hf:%s@%s", m.Repo, m.Revision))
	default:
		row("source", "imported file")
	}
	row("files", strings.Join(m.Files, ", "))
	row("shape", fmt.Sprintf("%s, %s, context %d", m.Arch, layers(m.Layers), m.Context))
	row("size", config.FormatBytes(m.StorageBytes))
	local := localState(m)
	if !m.Installed && m.Reason != "" {
		local += ": " + m.Reason
	}
	row("local", local)
	if len(m.HeldBy) > 0 {
		row("held by", strings.Join(m.HeldBy, ", "))
	}
	if d := m.Download; d != nil {
		dl := d.State + " " + progressBar(d.DoneBytes, d.TotalBytes, 20)
		if d.Error != "" {
			dl += ": " + d.Error
		}
		row("download", dl)
	}
	row("placement", m.Placement)
	if len(m.Instances) > 0 {
		row("instances", strings.Join(m.Instances, ", "))
	}
	return tw.Flush()
}

// escapeID escapes a model id for a URL path; its "/" stay separators,
// which the node's route takes as part of the id.
func escapeID(id string) string {
	parts := strings.Split(id, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// layers is "1 layer" or "N layers".
func layers(n int) string { return fmt.Sprintf("%d %s", n, plural(n, "layer", "layers")) }
