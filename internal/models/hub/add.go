package hub

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/platform/fault"
)

// Ref names a model on the Hub: hf:OWNER/REPO[/FILE.gguf][@REVISION].
type Ref struct {
	Repo     string // OWNER/REPO
	File     string // optional repository-relative .gguf path
	Revision string // optional branch, tag or commit; "" = main
}

func (r Ref) String() string {
	s := "hf:" + r.Repo
	if r.File != "" {
		s += "/" + r.File
	}
	if r.Revision != "" {
		s += "@" + r.Revision
	}
	return s
}

// ParseRef parses hf:OWNER/REPO[/FILE.gguf][@REVISION] (the hf: prefix is
// optional).
func ParseRef(s string) (Ref, error) {
	bad := func(why string) (Ref, error) {
		return Ref{}, fmt.Errorf("hub: %s: %s (want hf:OWNER/REPO[/FILE.gguf][@REVISION])", fault.Quote(s), why)
	}
	rest := strings.TrimPrefix(strings.TrimSpace(s), "hf:")
	var r Ref
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 2 {
		return bad("no OWNER/REPO")
	}
	last := &parts[len(parts)-1]
	if i := strings.LastIndexByte(*last, '@'); i >= 0 {
		r.Revision = (*last)[i+1:]
		*last = (*last)[:i]
		if r.Revision == "" || strings.ContainsAny(r.Revision, " \\") || strings.Contains(r.Revision, "..") {
			return bad("bad revision")
		}
	}
	r.Repo = parts[0] + "/" + parts[1]
	if !repoPattern.MatchString(r.Repo) || strings.Contains(r.Repo, "..") {
		return bad("bad repository name")
	}
	if len(parts) == 3 {
		r.File = parts[2]
		if r.File == "" || path.Clean(r.File) != r.File || strings.HasPrefix(r.File, "../") || !strings.HasSuffix(strings.ToLower(r.File), ".gguf") {
			return bad("the file must be a repository-relative .gguf path")
		}
	}
	return r, nil
}

// QuantPreference is the order in which a quantization is picked when an
// add names no file: the first one the repository has wins. Q4_K_M is the
// usual balance of size and quality; then larger, better quants; then
// smaller or legacy ones; unquantized last.
var QuantPreference = []string{
	"Q4_K_M", "Q5_K_M", "Q8_0", "Q6_K", "Q4_K_S", "Q5_K_S", "Q4_K", "Q5_K",
	"Q4_0", "Q5_0", "Q4_1", "Q5_1", "IQ4_XS", "IQ4_NL", "Q3_K_M", "Q3_K_L", "Q3_K_S", "Q2_K",
	"F16", "BF16", "F32",
}

var quantPattern = regexp.MustCompile(`(?i)(?:^|[-_.])((?:I?Q\d(?:_[A-Z0-9]+)*)|MXFP4|BF16|F16|F32)$`)

// QuantOf returns the quantization named in a GGUF file name (upper case),
// or "".
func QuantOf(file string) string {
	base := strings.TrimSuffix(path.Base(file), path.Ext(file))
	if m := splitSuffix.FindStringSubmatch(base); m != nil {
		base = m[1]
	}
	m := quantPattern.FindStringSubmatch(base)
	if m == nil {
		return ""
	}
	return strings.ToUpper(m[1])
}

var splitSuffix = regexp.MustCompile(`^(.*)-\d{5}-of-\d{5}$`)

// candidates groups a repository's GGUF files into loadable models: a
// single file, or the complete parts of a split GGUF (named by its first
// part). Projectors (mmproj) and incomplete splits are left out.
func candidates(info RepoInfo) [][]string {
	have := map[string]bool{}
	for _, f := range info.Files {
		have[f.Path] = true
	}
	var out [][]string
	for _, f := range info.Files {
		p := f.Path
		if !strings.HasSuffix(strings.ToLower(p), ".gguf") || strings.Contains(strings.ToLower(path.Base(p)), "mmproj") {
			continue
		}
		parts := catalog.SplitParts(p)
		if parts[0] != p {
			continue // listed once, by its first part
		}
		complete := true
		for _, q := range parts {
			complete = complete && have[q]
		}
		if complete {
			out = append(out, parts)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// PickFiles chooses the model files of a repository: the named file (with
// every part, when it is a split GGUF) or, when none is named, the first
// candidate in QuantPreference order.
func PickFiles(info RepoInfo, file string) ([]string, error) {
	if file != "" {
		parts := catalog.SplitParts(file)
		for _, p := range parts {
			if _, ok := info.File(p); !ok {
				return nil, fmt.Errorf("hub: %s at %s has no file %s: %w", info.Repo, info.Commit, p, ErrNotFound)
			}
		}
		return parts, nil
	}
	cs := candidates(info)
	if len(cs) == 0 {
		return nil, fmt.Errorf("hub: %s at %s has no GGUF model file: %w", info.Repo, info.Commit, ErrNotFound)
	}
	if len(cs) == 1 {
		return cs[0], nil
	}
	best, bestRank := -1, len(QuantPreference)
	for i, c := range cs {
		if r := slices.Index(QuantPreference, QuantOf(c[0])); r >= 0 && r < bestRank {
			best, bestRank = i, r
		}
	}
	if best < 0 {
		names := make([]string, len(cs))
		for i, c := range cs {
			names[i] = c[0]
		}
		return nil, fmt.Errorf("hub: %s has %d GGUF files and none has a known quantization in its name; name one: hf:%s/FILE.gguf (files: %s)", info.Repo, len(cs), info.Repo, strings.Join(names, ", "))
	}
	return cs[best], nil
}

var idUnsafe = regexp.MustCompile(`[^a-z0-9._-]+`)

// DefaultID derives a model id from a file name: lower case, without .gguf
// and split suffix, e.g. "qwen2.5-0.5b-instruct-q4_k_m".
func DefaultID(file string) string {
	base := strings.TrimSuffix(path.Base(file), path.Ext(file))
	if m := splitSuffix.FindStringSubmatch(base); m != nil {
		base = m[1]
	}
	id := strings.Trim(idUnsafe.ReplaceAllString(strings.ToLower(base), "-"), "-._")
	if len(id) > 128 {
		id = id[:128]
	}
	return id
}

// CardFor builds the card of a Hub model: it resolves the revision once to a
// full commit (persisted as the card's source_revision), picks the files,
// and reads only their GGUF headers. id "" derives one from the file name.
// Nothing is written.
func (c *Client) CardFor(ctx context.Context, ref Ref, id string) (catalog.Card, error) {
	info, err := c.Repo(ctx, ref.Repo, ref.Revision)
	if err != nil {
		return catalog.Card{}, err
	}
	files, err := PickFiles(info, ref.File)
	if err != nil {
		return catalog.Card{}, err
	}
	if id == "" {
		id = DefaultID(files[0])
	}
	headers := make([]*gguf.File, len(files))
	for i, f := range files {
		if headers[i], err = c.ReadHeader(ctx, info.Repo, info.Commit, f); err != nil {
			return catalog.Card{}, err
		}
	}
	card, err := catalog.CardFromHeaders(id, headers)
	if err != nil {
		return catalog.Card{}, err
	}
	card.Repo, card.Revision, card.Files = info.Repo, info.Commit, files
	if err := card.Validate(); err != nil {
		return catalog.Card{}, err
	}
	return card, nil
}

// Add resolves ref, builds its card and stores it as a custom card (the
// operator's explicit add authorizes it). It returns the card and the card
// file's path. Weights are not downloaded: Manager.Ensure does that.
func Add(ctx context.Context, c *Client, store *catalog.Store, ref Ref, id string) (catalog.Card, string, error) {
	card, err := c.CardFor(ctx, ref, id)
	if err != nil {
		return catalog.Card{}, "", err
	}
	p, err := store.AddCustom(card)
	return card, p, err
}
