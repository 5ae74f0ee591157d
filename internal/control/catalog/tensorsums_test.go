package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/engine/gguf"
)

// An import records the header's and every tensor's sum in the sidecar,
// each matching the bytes of the file.
func TestImportRecordsTensorSums(t *testing.T) {
	s := newTestStore(t)
	c, err := s.Import(t.Context(), "stories", storiesPath)
	if err != nil {
		t.Fatal(err)
	}
	in, err := s.Locate(c)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := readSidecar(in.Dir)
	if err != nil {
		t.Fatal(err)
	}
	ts := sc.Manifest[0].Tensors
	if ts == nil {
		t.Fatal("the sidecar has no tensor sums")
	}
	checkSums(t, in.Paths[0], ts)
}

func checkSums(t *testing.T, path string, ts *TensorSums) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	sum := func(p []byte) string { s := sha256.Sum256(p); return hex.EncodeToString(s[:]) }
	if ts.HeaderBytes != f.DataOffset || ts.HeaderSHA256 != sum(b[:f.DataOffset]) {
		t.Fatalf("header: %d bytes %s, want %d", ts.HeaderBytes, ts.HeaderSHA256, f.DataOffset)
	}
	if len(ts.Tensors) != len(f.Tensors) {
		t.Fatalf("%d tensor sums for %d tensors", len(ts.Tensors), len(f.Tensors))
	}
	for i, ti := range f.Tensors {
		data, _ := f.TensorData(ti.Name)
		got := ts.Tensors[i]
		if got.Name != ti.Name || got.Offset != f.DataOffset+int64(ti.Offset) || got.Size != ti.Size || got.SHA256 != sum(data) {
			t.Fatalf("tensor %s: %+v", ti.Name, got)
		}
	}
}

// A model installed before tensor sums existed gets them on first use,
// written into its sidecar once; the installation still verifies.
func TestTensorSumsLazily(t *testing.T) {
	s := newTestStore(t)
	c, err := s.Import(t.Context(), "stories", storiesPath)
	if err != nil {
		t.Fatal(err)
	}
	in, _ := s.Locate(c)
	side := filepath.Join(in.Dir, SidecarPath)
	sc, _ := readSidecar(in.Dir)
	sc.Manifest[0].Tensors = nil
	b, _ := json.Marshal(sc)
	if err := os.WriteFile(side, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, e, err := s.TensorSums(t.Context(), c)
	if err != nil || e.Tensors == nil {
		t.Fatalf("lazy sums: %v", err)
	}
	checkSums(t, in.Paths[0], e.Tensors)
	if sc, _ := readSidecar(in.Dir); sc.Manifest[0].Tensors == nil {
		t.Fatal("the sums were not written into the sidecar")
	}
	if _, err := s.Locate(c); err != nil {
		t.Fatalf("after writing the sums: %v", err)
	}
}

func TestDecodeSidecarChecksTensorSums(t *testing.T) {
	s := newTestStore(t)
	c, err := s.Import(t.Context(), "stories", storiesPath)
	if err != nil {
		t.Fatal(err)
	}
	in, _ := s.Locate(c)
	good, _ := readSidecar(in.Dir)
	for _, tc := range []struct {
		name  string
		spoil func(ts *TensorSums)
		want  string
	}{
		{"header past the file", func(ts *TensorSums) { ts.HeaderBytes = 1 << 40 }, "header"},
		{"bad header sum", func(ts *TensorSums) { ts.HeaderSHA256 = "x" }, "header"},
		{"tensor inside the header", func(ts *TensorSums) { ts.Tensors[0].Offset = 0 }, "data section"},
		{"tensor past the end", func(ts *TensorSums) { ts.Tensors[1].Size = 1 << 40 }, "data section"},
		{"repeated name", func(ts *TensorSums) { ts.Tensors[1].Name = ts.Tensors[0].Name }, "name"},
		{"bad tensor sum", func(ts *TensorSums) { ts.Tensors[2].SHA256 = strings.Repeat("z", 64) }, "sha256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := json.Marshal(good)
			var sc Sidecar
			json.Unmarshal(b, &sc)
			tc.spoil(sc.Manifest[0].Tensors)
			b, _ = json.Marshal(sc)
			if _, err := DecodeSidecar(b); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("DecodeSidecar: %v, want an error about %s", err, tc.want)
			}
		})
	}
}
