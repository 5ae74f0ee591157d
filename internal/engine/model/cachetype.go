package model

import (
	"fmt"

	"github.com/skulk/skulk/internal/engine/tensor"
)

// CacheTypes are the key/value cache element types a shard can keep, by
// the names llama.cpp's -ctk/-ctv take.
var CacheTypes = []string{"f16", "f32", "q8_0", "q4_0"}

// CacheTypeError is returned for a cache type the engine cannot keep.
type CacheTypeError struct {
	Name   string
	Reason string
}

func (e *CacheTypeError) Error() string {
	return fmt.Sprintf("model: KV cache type %q: %s", e.Name, e.Reason)
}

// ParseCacheType maps a cache type name ("" is the default, f16) to its
// element type.
func ParseCacheType(name string) (tensor.Type, error) {
	switch name {
	case "", "f16":
		return tensor.F16, nil
	case "f32":
		return tensor.F32, nil
	case "q8_0":
		return tensor.Q8_0, nil
	case "q4_0":
		return tensor.Q4_0, nil
	}
	return 0, &CacheTypeError{Name: name, Reason: "use f16, f32, q8_0 or q4_0"}
}
