// Package shortname is the library of short model names, as Ollama's
// library has them: `qwen3:8b`, `gemma3:4b`, `gpt-oss:20b`. Each name is one
// GGUF file in a Hugging Face Hub repository; adding or pulling a name pins
// that repository's commit exactly as `skulk models add hf:REPO` does, and
// the model's id in the catalog is the name itself.
//
// The library is data: library.toml, embedded in the binary and checked by
// this package's tests. Builtin parses it; tests may Parse another. A
// Library is an immutable value, safe for concurrent use.
package shortname

import (
	"bytes"
	_ "embed"
	"fmt"
	"github.com/skulk/skulk/internal/platform/fault"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/skulk/skulk/internal/engine/model"
	"github.com/skulk/skulk/internal/models/hub"
)

//go:embed library.toml
var builtinTOML []byte

// Builtin returns the library built into the binary.
func Builtin() (Library, error) {
	lib, err := Parse(builtinTOML)
	if err != nil {
		return Library{}, fmt.Errorf("the built-in model library: %w", err)
	}
	return lib, nil
}

// Entry is one name of the library.
type Entry struct {
	Name         string `toml:"name" json:"name"` // FAMILY:TAG
	Default      bool   `toml:"default" json:"default"`
	Repo         string `toml:"repo" json:"repo"`
	File         string `toml:"file" json:"file"`
	Size         int64  `toml:"size" json:"size_bytes"`
	Architecture string `toml:"architecture" json:"architecture"`
	Description  string `toml:"description" json:"description"`
}

// Family is the part of the name before the colon ("qwen3").
func (e Entry) Family() string { f, _, _ := strings.Cut(e.Name, ":"); return f }

// Tag is the part of the name after the colon ("8b", "1b-q8_0").
func (e Entry) Tag() string { _, t, _ := strings.Cut(e.Name, ":"); return t }

// Quant is the quantization the file's name says ("Q4_K_M"), or "".
func (e Entry) Quant() string { return hub.QuantOf(e.File) }

// Ref is the Hub reference the name stands for, unpinned: the add pins it.
func (e Entry) Ref() hub.Ref { return hub.Ref{Repo: e.Repo, File: e.File} }

// Library is the set of short names. The zero value is an empty library.
type Library struct {
	entries []Entry // sorted by name; never modified after Parse
}

// namePattern is FAMILY:TAG: lower-case letters, digits, '.', '_' and '-',
// each part starting with a letter or digit.
var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*:[a-z0-9][a-z0-9._-]*$`)

// queryPattern is what a name the user types may look like: FAMILY or
// FAMILY:TAG, in any case. A Hub reference (OWNER/REPO) never matches it.
var queryPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*(:[A-Za-z0-9][A-Za-z0-9._-]*)?$`)

// IsName reports whether s has the shape of a short name (FAMILY or
// FAMILY:TAG), as opposed to a Hub reference or a path.
func IsName(s string) bool {
	s = strings.TrimSpace(s)
	return queryPattern.MatchString(s) && !strings.HasPrefix(strings.ToLower(s), "hf:")
}

// Parse reads a library file (library.toml's format) and checks every
// entry: a FAMILY:TAG name, unique; a Hub repository and .gguf file; a
// positive size; an architecture the engine runs; and exactly one default
// tag per family.
func Parse(data []byte) (Library, error) {
	var doc struct {
		Model []Entry `toml:"model"`
	}
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&doc)
	if err != nil {
		return Library{}, fmt.Errorf("shortname: %w", err)
	}
	if extra := md.Undecoded(); len(extra) > 0 {
		return Library{}, fmt.Errorf("shortname: unknown key %s (known: name, default, repo, file, size, architecture, description)", extra[0])
	}
	seen := map[string]bool{}
	defaults := map[string][]string{}
	families := map[string]bool{}
	for i, e := range doc.Model {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("shortname: model %d (%q): %s", i+1, e.Name, fmt.Sprintf(format, args...))
		}
		switch {
		case !namePattern.MatchString(e.Name) || len(e.Name) > 128:
			return Library{}, bad("the name must be FAMILY:TAG in lower-case letters, digits and . _ -")
		case seen[e.Name]:
			return Library{}, bad("the name is listed twice")
		case e.Size <= 0:
			return Library{}, bad("size must be the file's bytes, a positive number")
		case !slices.Contains(model.SupportedArchs(), e.Architecture):
			return Library{}, bad("architecture %q is not one the engine runs (%s)", e.Architecture, strings.Join(model.SupportedArchs(), ", "))
		case strings.TrimSpace(e.Description) == "":
			return Library{}, bad("description is empty")
		}
		ref, err := hub.ParseRef("hf:" + e.Repo + "/" + e.File)
		if err != nil || ref.Repo != e.Repo || ref.File != e.File || ref.Revision != "" {
			return Library{}, bad("repo and file must name a Hub repository OWNER/REPO and a .gguf in it (%v)", err)
		}
		seen[e.Name] = true
		families[e.Family()] = true
		if e.Default {
			defaults[e.Family()] = append(defaults[e.Family()], e.Name)
		}
	}
	for f := range families {
		if seen[f+":latest"] {
			return Library{}, fmt.Errorf("shortname: %s:latest: the tag latest means the family's default; mark that entry default = true instead", f)
		}
		if d := defaults[f]; len(d) != 1 {
			return Library{}, fmt.Errorf("shortname: family %s has %d default tags (%s); mark exactly one entry default = true", f, len(d), strings.Join(d, ", "))
		}
	}
	entries := slices.Clone(doc.Model)
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	return Library{entries: entries}, nil
}

// Entries returns every entry, sorted by name.
func (l Library) Entries() []Entry { return slices.Clone(l.entries) }

// Lookup resolves a name as the user typed it (case and surrounding space
// do not matter): FAMILY:TAG exactly; FAMILY or FAMILY:latest as the
// family's default tag; FAMILY:SIZE-QUANT as the entry FAMILY:SIZE when its
// file is of that quantization (qwen3:8b-q4_k_m is qwen3:8b).
func (l Library) Lookup(name string) (Entry, bool) {
	name = strings.ToLower(strings.TrimSpace(name))
	family, tag, hasTag := strings.Cut(name, ":")
	if !hasTag || tag == "latest" {
		for _, e := range l.entries {
			if e.Default && e.Family() == family {
				return e, true
			}
		}
		return Entry{}, false
	}
	for _, e := range l.entries {
		if e.Name == name {
			return e, true
		}
	}
	for _, e := range l.entries {
		if q := strings.ToLower(e.Quant()); q != "" && e.Family() == family && e.Tag()+"-"+q == tag {
			return e, true
		}
	}
	return Entry{}, false
}

// Suggest returns up to n names of the library nearest to name: names that
// start with it (a family typed in part, or a family whose tag is wrong)
// first, then the closest by edit distance, when close enough to be a
// typo. It returns nothing for a name unlike any of them.
func (l Library) Suggest(name string, n int) []string {
	name = strings.ToLower(strings.TrimSpace(name))
	if len(name) > maxSuggestable {
		return nil // no typo of a library name; and the distance is quadratic
	}
	family, _, _ := strings.Cut(name, ":")
	type cand struct {
		name string
		rank int // 0: same family or prefix; then 1 + edit distance
	}
	var cands []cand
	for _, e := range l.entries {
		switch {
		case family != "" && (e.Family() == family || strings.HasPrefix(e.Name, name)):
			cands = append(cands, cand{e.Name, 0})
		default:
			// Compare with the whole name, and the family alone when the
			// query has no tag.
			d := distance(name, e.Name)
			if !strings.Contains(name, ":") {
				d = min(d, distance(name, e.Family()))
			}
			if d <= max(2, len([]rune(name))/3) {
				cands = append(cands, cand{e.Name, 1 + d})
			}
		}
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].rank != cands[j].rank {
			return cands[i].rank < cands[j].rank
		}
		return cands[i].name < cands[j].name
	})
	var out []string
	for _, c := range cands {
		if len(out) == n {
			break
		}
		out = append(out, c.name)
	}
	return out
}

// maxSuggestable bounds the names Suggest compares: the library's are a
// few dozen bytes.
const maxSuggestable = 128

// distance is the Levenshtein distance between a and b, in runes.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// UnknownError is a name neither the catalog nor the library knows, with
// the library names it may have meant.
type UnknownError struct {
	Name        string
	Suggestions []string
}

func (e *UnknownError) Error() string {
	msg := "unknown model " + fault.Quote(e.Name)
	switch len(e.Suggestions) {
	case 0:
		return msg
	case 1:
		return msg + fmt.Sprintf("; did you mean %s?", e.Suggestions[0])
	}
	return msg + fmt.Sprintf("; did you mean one of %s?", strings.Join(e.Suggestions, ", "))
}
