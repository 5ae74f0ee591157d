package ollama

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/api/wirejson"
)

// Version is the Ollama release whose API these translators follow, which
// GET /api/version reports: clients compare it to decide which features to
// use (format schemas, tools, think), so it names the API, not Skulk's own
// release.
const Version = "0.12.0"

// VersionResponse is the GET /api/version document: the Ollama API version
// clients compare, and Skulk's own version and commit (what `skulk version`
// prints), which Ollama's clients ignore.
type VersionResponse struct {
	Version      string `json:"version"`
	SkulkVersion string `json:"skulk_version,omitempty"`
	SkulkCommit  string `json:"skulk_commit,omitempty"`
}

// Card is the part of a model's catalog entry (GET /models) that these
// translators read. Fields the catalog leaves empty stay unknown and are
// omitted from answers rather than guessed.
type Card struct {
	ID            string   `json:"model_id"`
	Name          string   `json:"name"`
	Repo          string   `json:"source_repository"`
	Files         []string `json:"files"`
	Digest        string   `json:"digest"`
	Arch          string   `json:"architecture"`
	Layers        int      `json:"layers"`
	HiddenSize    int      `json:"hidden_size"`
	Heads         int      `json:"heads"`
	KVHeads       int      `json:"kv_heads"`
	HeadDim       int      `json:"head_dim"`
	VocabSize     int      `json:"vocab_size"`
	ContextLength int      `json:"context_length"`
	StorageBytes  int64    `json:"storage_bytes"`
	Tasks         []string `json:"tasks"`
	Capabilities  []string `json:"capabilities"`
	ChatTemplate  string   `json:"chat_template"`
	Runtime       struct {
		ServedContext int `json:"served_context"`
	} `json:"runtime"`
	// Installed says this node has the weights; HeldBy names the nodes
	// that do. A model held somewhere loads on demand.
	Installed bool     `json:"installed"`
	HeldBy    []string `json:"held_by"`
}

// ParseCatalog reads the cards of a catalog document: {"data":[entry...]}
// (the node's GET /models) or {"models":[...]} or a bare array. Entries
// without a model_id are skipped.
func ParseCatalog(doc []byte) ([]Card, error) {
	doc = bytes.TrimSpace(doc)
	var cards []Card
	if len(doc) > 0 && doc[0] == '[' {
		if err := json.Unmarshal(doc, &cards); err != nil {
			return nil, fmt.Errorf("ollama: catalog document: %w", err)
		}
	} else {
		var wrap struct {
			Data   []Card `json:"data"`
			Models []Card `json:"models"`
		}
		if err := json.Unmarshal(doc, &wrap); err != nil {
			return nil, fmt.Errorf("ollama: catalog document: %w", err)
		}
		cards = append(wrap.Data, wrap.Models...)
	}
	return slices.DeleteFunc(cards, func(c Card) bool { return c.ID == "" }), nil
}

// Instance is the part of a placed instance (GET /state's instances) that
// GET /api/ps reads.
type Instance struct {
	ID              string `json:"-"`
	Model           string `json:"model"`
	Backend         string `json:"backend"`
	ContextTokens   int    `json:"context_tokens"`
	CreatedAtUnixMs int64  `json:"created_at_unix_ms"`
	Status          string `json:"status"`
	// ExpiresAt is when an instance placed on demand unloads if it stays
	// idle, where the state document knows it (the node that runs its
	// first rank); nil otherwise.
	ExpiresAt *time.Time `json:"-"`
}

// InstanceReady is the status of an instance that serves requests.
const InstanceReady = "ready"

// nativeCPU is the backend tag of the native engine, which runs on CPUs
// only: its instances hold no GPU memory.
const nativeCPU = "native-cpu"

// ParseInstances reads the instances of a state document
// ({"instances":{id:{...}}}), sorted by id.
func ParseInstances(doc []byte) ([]Instance, error) {
	var st struct {
		Instances map[string]Instance  `json:"instances"`
		ExpiresAt map[string]time.Time `json:"expiresAt"`
	}
	if err := json.Unmarshal(doc, &st); err != nil {
		return nil, fmt.Errorf("ollama: state document: %w", err)
	}
	out := make([]Instance, 0, len(st.Instances))
	for id, inst := range st.Instances {
		inst.ID = id
		if at, ok := st.ExpiresAt[id]; ok {
			inst.ExpiresAt = &at
		}
		out = append(out, inst)
	}
	slices.SortFunc(out, func(a, b Instance) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Details is Ollama's model details object. Family is the GGUF
// architecture; ParameterSize and QuantizationLevel are read from the GGUF
// file name (the conventional "-0.5B-" and "-Q4_K_M" parts) and omitted
// when the name does not say.
type Details struct {
	ParentModel       string   `json:"parent_model"`
	Format            string   `json:"format"`
	Family            string   `json:"family,omitempty"`
	Families          []string `json:"families,omitempty"`
	ParameterSize     string   `json:"parameter_size,omitempty"`
	QuantizationLevel string   `json:"quantization_level,omitempty"`
}

// quantRE matches a ggml type in a GGUF file name: Q4_K_M, Q8_0, IQ4_XS,
// F16, BF16, ...
var quantRE = regexp.MustCompile(`(?i)(?:^|[-_.])((?:I?Q[1-8](?:_[A-Z0-9]{1,2}){0,2})|BF16|F16|F32)(?:[-.]|$)`)

// sizeRE matches a parameter count in a model or file name: 135M, 0.5B, 7b.
var sizeRE = regexp.MustCompile(`(?i)(?:^|[-_ /])(\d+(?:\.\d+)?)([MBT])(?:[-_ .]|$)`)

// details returns what the card says about the model's files.
func details(c Card) Details {
	d := Details{Format: "gguf", Family: c.Arch}
	if c.Arch != "" {
		d.Families = []string{c.Arch}
	}
	for _, f := range c.Files {
		name := strings.TrimSuffix(path.Base(f), path.Ext(f))
		if m := quantRE.FindStringSubmatch(name); m != nil && d.QuantizationLevel == "" {
			d.QuantizationLevel = strings.ToUpper(m[1])
		}
	}
	for _, name := range append(append([]string{}, c.Files...), c.Repo, c.ID, c.Name) {
		if m := sizeRE.FindStringSubmatch(path.Base(name)); m != nil {
			d.ParameterSize = m[1] + strings.ToUpper(m[2])
			break
		}
	}
	return d
}

// ReadyModel is a model with a ready instance, and when it (or its card)
// was added; a zero time is unknown.
type ReadyModel struct {
	Name    string
	Created time.Time
}

// ListModel is one model of GET /api/tags. Unknown fields are omitted.
type ListModel struct {
	Name       string    `json:"name"`
	Model      string    `json:"model"`
	ModifiedAt time.Time `json:"modified_at,omitzero"`
	Size       int64     `json:"size,omitempty"`
	Digest     string    `json:"digest,omitempty"`
	Details    *Details  `json:"details,omitempty"`
}

// ListResponse is the GET /api/tags document.
type ListResponse struct {
	Models []ListModel `json:"models"`
}

func cardIndex(cards []Card) map[string]Card {
	m := make(map[string]Card, len(cards))
	for _, c := range cards {
		m[c.ID] = c
	}
	return m
}

// Tags lists the ready models and the catalog's installed ones (which a
// request loads on demand), with size, digest and details from their
// catalog cards where the catalog has one.
func Tags(models []ReadyModel, cards []Card) ListResponse {
	byID := cardIndex(cards)
	models = slices.Clone(models)
	listed := map[string]bool{}
	for _, m := range models {
		listed[m.Name] = true
	}
	for _, c := range cards {
		if !listed[c.ID] && (c.Installed || len(c.HeldBy) > 0) {
			listed[c.ID] = true
			models = append(models, ReadyModel{Name: c.ID})
		}
	}
	slices.SortStableFunc(models, func(a, b ReadyModel) int { return strings.Compare(a.Name, b.Name) })
	out := ListResponse{Models: make([]ListModel, 0, len(models))}
	for _, m := range models {
		lm := ListModel{Name: m.Name, Model: m.Name, ModifiedAt: m.Created.UTC()}
		if c, ok := byID[m.Name]; ok {
			d := details(c)
			lm.Size, lm.Digest, lm.Details = c.StorageBytes, c.Digest, &d
		}
		out.Models = append(out.Models, lm)
	}
	return out
}

// ProcessModel is one running instance of GET /api/ps. SizeVRAM is 0 for
// the native engine (it runs on CPUs) and omitted for other backends;
// ExpiresAt is when an instance placed on demand unloads if it stays idle,
// omitted for an explicit placement (which never unloads), one in use, and
// one whose idle clock another node keeps.
type ProcessModel struct {
	Name          string     `json:"name"`
	Model         string     `json:"model"`
	Size          int64      `json:"size,omitempty"`
	Digest        string     `json:"digest,omitempty"`
	Details       *Details   `json:"details,omitempty"`
	SizeVRAM      *int64     `json:"size_vram,omitempty"`
	ContextLength int        `json:"context_length,omitempty"`
	ExpiresAt     *time.Time `json:"expires_at,omitempty"`
}

// ProcessResponse is the GET /api/ps document.
type ProcessResponse struct {
	Models []ProcessModel `json:"models"`
}

// PS lists the ready instances, one entry each.
func PS(instances []Instance, cards []Card) ProcessResponse {
	byID := cardIndex(cards)
	out := ProcessResponse{Models: []ProcessModel{}}
	for _, inst := range instances {
		if inst.Status != InstanceReady {
			continue
		}
		pm := ProcessModel{Name: inst.Model, Model: inst.Model, ContextLength: inst.ContextTokens, ExpiresAt: inst.ExpiresAt}
		if c, ok := byID[inst.Model]; ok {
			d := details(c)
			pm.Size, pm.Digest, pm.Details = c.StorageBytes, c.Digest, &d
		}
		if inst.Backend == nativeCPU {
			pm.SizeVRAM = new(int64)
		}
		out.Models = append(out.Models, pm)
	}
	return out
}

// ShowRequest is a decoded POST /api/show body.
type ShowRequest struct {
	Model string
}

// DecodeShowRequest decodes a POST /api/show body: model (or the older
// name). verbose, system, template and options are accepted and ignored
// (there is no tensor list to add, and no Modelfile to override).
func DecodeShowRequest(body []byte) (ShowRequest, error) {
	var w struct {
		Model    string          `json:"model"`
		Name     string          `json:"name"`
		Verbose  *bool           `json:"verbose"`
		System   *string         `json:"system"`
		Template *string         `json:"template"`
		Options  json.RawMessage `json:"options"`
	}
	if err := wirejson.Unmarshal(body, &w); err != nil {
		return ShowRequest{}, err
	}
	if w.Model == "" {
		w.Model = w.Name
	}
	if w.Model == "" {
		return ShowRequest{}, fault.ParamErrorf("model", "model is required")
	}
	return ShowRequest{Model: w.Model}, nil
}

// ShowResponse is the POST /api/show document. Template is the card's chat
// template when the card overrides the GGUF's (the GGUF's own is not in the
// catalog); Parameters holds num_ctx when the card sets a served context;
// ModelInfo holds the GGUF metadata the card records, under GGUF's keys.
type ShowResponse struct {
	Parameters   string         `json:"parameters,omitempty"`
	Template     string         `json:"template,omitempty"`
	Details      Details        `json:"details"`
	ModelInfo    map[string]any `json:"model_info,omitempty"`
	Capabilities []string       `json:"capabilities,omitempty"`
	ModifiedAt   time.Time      `json:"modified_at,omitzero"`
}

// Show describes a catalog model; modified is when it became ready (zero
// when unknown or not ready).
func Show(c Card, modified time.Time) ShowResponse {
	r := ShowResponse{Template: c.ChatTemplate, Details: details(c), Capabilities: capabilities(c)}
	if !modified.IsZero() {
		r.ModifiedAt = modified.UTC()
	}
	if c.Runtime.ServedContext > 0 {
		r.Parameters = "num_ctx " + strconv.Itoa(c.Runtime.ServedContext)
	}
	if c.Arch != "" {
		info := map[string]any{"general.architecture": c.Arch}
		for _, kv := range []struct {
			key string
			v   int
		}{
			{"block_count", c.Layers}, {"context_length", c.ContextLength}, {"embedding_length", c.HiddenSize},
			{"attention.head_count", c.Heads}, {"attention.head_count_kv", c.KVHeads},
			{"attention.key_length", c.HeadDim}, {"vocab_size", c.VocabSize},
		} {
			if kv.v > 0 {
				info[c.Arch+"."+kv.key] = kv.v
			}
		}
		r.ModelInfo = info
	}
	return r
}

// capabilities maps the card's tasks and capabilities to Ollama's words.
// Vision is left out even when the model has it: this server accepts text
// only, and a client that saw "vision" would send images.
func capabilities(c Card) []string {
	var out []string
	if slices.Contains(c.Tasks, "text-generation") {
		out = append(out, "completion")
	}
	for _, cp := range c.Capabilities {
		switch cp {
		case "tools":
			out = append(out, "tools")
		case "reasoning":
			out = append(out, "thinking")
		case "embeddings":
			out = append(out, "embedding")
		}
	}
	return out
}
