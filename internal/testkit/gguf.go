package testkit

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"

	"github.com/skulk/skulk/internal/engine/gguf"
)

// OverlapGGUF writes to dst a copy of the GGUF file src in which tensor
// moved's data starts shift bytes into tensor onto's (shift 0: moved aliases
// onto), by rewriting one offset in moved's tensor info. Choose two tensors
// of one shape so the moved one still ends inside the file: the reader must
// then refuse the copy for the overlap alone (gguf.ErrOverlap).
func OverlapGGUF(t testing.TB, src, dst, moved, onto string, shift uint64) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	m, ok1 := f.Tensor(moved)
	o, ok2 := f.Tensor(onto)
	if !ok1 || !ok2 {
		t.Fatalf("%s has no tensor %q or %q", src, moved, onto)
	}
	// The tensor infos end the header: the last copy of the encoded name
	// before the data section is moved's info.
	name := binary.LittleEndian.AppendUint64(nil, uint64(len(moved)))
	name = append(name, moved...)
	at := bytes.LastIndex(b[:f.DataOffset], name)
	if at < 0 {
		t.Fatalf("%s: the info of tensor %q was not found", src, moved)
	}
	at += len(name) + 4 + 8*len(m.Dims) + 4 // n_dims, dims, type
	if got := binary.LittleEndian.Uint64(b[at:]); got != m.Offset {
		t.Fatalf("%s: tensor %q: offset field holds %d, want %d", src, moved, got, m.Offset)
	}
	binary.LittleEndian.PutUint64(b[at:], o.Offset+shift)
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
