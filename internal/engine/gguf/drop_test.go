package gguf

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/skulk/skulk/internal/engine/tensor"
)

// TestDropKeepsData drops a tensor's pages (what the model loader does
// after packing a copy) and reads the tensor again: the advice may free
// the pages, never change what the file holds. A range outside the
// mapping is ignored.
func TestDropKeepsData(t *testing.T) {
	w := NewWriter()
	w.Set("general.architecture", "llama")
	big := make([]byte, 4*4096*5) // five pages and more of F32
	for i := range big {
		big[i] = byte(i * 7)
	}
	w.AddTensor("big", tensor.F32, []uint64{4096 * 5}, big)
	w.AddTensor("small", tensor.F32, []uint64{8}, make([]byte, 32))
	path := filepath.Join(t.TempDir(), "drop.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	data, err := f.TensorData("big")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, big) {
		t.Fatal("tensor data differs before the drop")
	}
	f.Drop(data)
	f.Drop(data[1:100])         // less than a page: nothing to drop
	f.Drop(make([]byte, 1<<16)) // not the file's
	f.Drop(nil)
	if !bytes.Equal(data, big) {
		t.Fatal("tensor data differs after the drop")
	}
}
