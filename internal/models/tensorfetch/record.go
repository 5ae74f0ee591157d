package tensorfetch

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/skulk/skulk/internal/control/catalog"
)

// recordFile, beside a partial copy, says which of its parts are verified.
const recordFile = "partial.json"

const recordVersion = 1

type record struct {
	Version int          `json:"version"`
	Card    catalog.Card `json:"card"`
	SHA256  string       `json:"sha256"` // of the whole original file
	Size    int64        `json:"size"`
	Have    []string     `json:"have"` // verified parts: "header" and tensor names
	// Sums are the installing node's, so the copy serves a range again
	// when no member answers.
	Sums *catalog.TensorSums `json:"sums,omitempty"`
}

func loadRecord(dir string) (*record, error) {
	b, err := os.ReadFile(filepath.Join(dir, recordFile))
	if err != nil {
		return nil, err
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	if r.Version != recordVersion {
		return nil, os.ErrNotExist
	}
	return &r, nil
}

// saveRecord writes the record through a temporary file and a rename, so
// a crash leaves the old record or the new one.
func saveRecord(dir string, r *record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+recordFile+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, recordFile))
}
