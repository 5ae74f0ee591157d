package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// ErrUnknownField marks a card file that sets a field the format lacks
// (usually a typo); CardFileError names the field and the file.
var ErrUnknownField = errors.New("unknown field")

// CardFileError reports a card file that cannot be used.
type CardFileError struct {
	File  string // the file's path
	Field string // the offending field, when one is to blame
	Err   error
}

func (e *CardFileError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("catalog: card file %s: field %q: %v (see docs/model-cards.md for the fields a card may set)", e.File, e.Field, e.Err)
	}
	return fmt.Sprintf("catalog: card file %s: %v", e.File, e.Err)
}

func (e *CardFileError) Unwrap() error { return e.Err }

// maxCardFile bounds a card file; real cards are a few kilobytes (a chat
// template override is the largest part).
const maxCardFile = 1 << 20

// DecodeCardTOML strictly decodes a TOML card: an unknown field is an error
// naming the field and file. A card that omits layer_bytes gets the layer
// share of storage_bytes split evenly over its layers. The card is validated.
func DecodeCardTOML(file string, b []byte) (Card, error) {
	if len(b) > maxCardFile {
		return Card{}, &CardFileError{File: file, Err: fmt.Errorf("%d bytes is more than a card may hold (%d)", len(b), maxCardFile)}
	}
	var c Card
	md, err := toml.NewDecoder(bytes.NewReader(b)).Decode(&c)
	if err != nil {
		return Card{}, &CardFileError{File: file, Err: err}
	}
	if und := md.Undecoded(); len(und) > 0 {
		return Card{}, &CardFileError{File: file, Field: und[0].String(), Err: ErrUnknownField}
	}
	if len(c.LayerBytes) == 0 && c.Layers > 0 {
		per := max(c.StorageBytes-c.EmbeddingBytes-c.HeadBytes, 0) / int64(c.Layers)
		c.LayerBytes = make([]int64, c.Layers)
		for i := range c.LayerBytes {
			c.LayerBytes[i] = per
		}
	}
	if err := c.Validate(); err != nil {
		return Card{}, &CardFileError{File: file, Err: err}
	}
	return c, nil
}

// EncodeCardTOML writes a card in the TOML card format.
func EncodeCardTOML(c Card) ([]byte, error) {
	if c.Builtin {
		return nil, fmt.Errorf("catalog: the built-in card %s cannot be written as a custom card", c.ID)
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# Skulk model card for %s (format: docs/model-cards.md).\n", c.ID)
	if err := toml.NewEncoder(&buf).Encode(c); err != nil {
		return nil, fmt.Errorf("catalog: encode card %s: %w", c.ID, err)
	}
	return buf.Bytes(), nil
}

// Custom is the source of the operator's custom cards: every *.toml file in
// Dir. A missing directory is an empty source. Files that fail to decode are
// reported in the error while the good ones still load.
type Custom struct {
	Dir string
}

// Cards reads the custom cards, sorted by file name.
func (s Custom) Cards() ([]Card, error) {
	files, err := s.files()
	if err != nil {
		return nil, err
	}
	var cards []Card
	var errs []error
	seen := map[string]string{}
	for _, f := range files {
		c, err := readCardFile(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if prev, dup := seen[c.ID]; dup {
			errs = append(errs, &CardFileError{File: f, Field: "model_id", Err: fmt.Errorf("model %s is already defined by %s; remove one of the two files", c.ID, prev)})
			continue
		}
		seen[c.ID] = f
		cards = append(cards, c)
	}
	return cards, errors.Join(errs...)
}

func (s Custom) files() ([]string, error) {
	ents, err := os.ReadDir(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: custom cards: %w", err)
	}
	var out []string
	for _, e := range ents {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".toml") && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, filepath.Join(s.Dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

func readCardFile(path string) (Card, error) {
	f, err := os.Open(path)
	if err != nil {
		return Card{}, &CardFileError{File: path, Err: err}
	}
	defer f.Close()
	b, err := readLimited(f, maxCardFile)
	if err != nil {
		return Card{}, &CardFileError{File: path, Err: err}
	}
	return DecodeCardTOML(path, b)
}

// cardFileName is the custom card file name of a model id: the id with the
// characters a file name cannot hold replaced. The file's model_id field,
// not its name, is authoritative.
func cardFileName(id string) string {
	r := strings.NewReplacer("/", "--", ":", "_")
	return r.Replace(id) + ".toml"
}
