package testkit

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/tensor"
)

// HostileGGUF is one crafted GGUF header of the hostile corpus: Build makes
// its bytes (some are tens of MiB, so a test builds one at a time), and the
// reader must refuse it with an error that satisfies errors.Is(err, Kind)
// (as a prefix read by gguf.ParseHeader, gguf.ErrTooLarge reads as
// gguf.ErrTruncated).
type HostileGGUF struct {
	Name  string
	Kind  error
	Build func() []byte
}

func hle32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func hle64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
func hstr(s string) []byte  { return append(hle64(uint64(len(s))), s...) }
func hcat(parts ...[]byte) []byte {
	return bytes.Join(parts, nil)
}

// hhdr is a version 3 file header.
func hhdr(nt, nkv uint64) []byte { return hcat([]byte("GGUF"), hle32(3), hle64(nt), hle64(nkv)) }

// hkv starts a file of nKV metadata entries whose first is key, of type t.
func hkv(nKV uint64, key string, t gguf.ValueType) *bytes.Buffer {
	b := bytes.NewBuffer(hhdr(0, nKV))
	b.Write(hstr(key))
	b.Write(hle32(uint32(t)))
	return b
}

func htensor(name string, dims []uint64, typ tensor.Type, off uint64) []byte {
	b := hcat(hstr(name), hle32(uint32(len(dims))))
	for _, d := range dims {
		b = append(b, hle64(d)...)
	}
	return hcat(b, hle32(uint32(typ)), hle64(off))
}

// hpad fills b to the default alignment (32).
func hpad(b []byte) []byte {
	for len(b)%gguf.DefaultAlignment != 0 {
		b = append(b, 0)
	}
	return b
}

// DeepArraysGGUF is a file of one metadata entry whose value is depth
// arrays of arrays, each of one element, around an empty uint8 array: 12
// bytes per level (200,000 levels make the 2.4 MB file of issue 27).
func DeepArraysGGUF(depth int) []byte {
	b := hkv(1, "k", gguf.TypeArray)
	for range depth - 1 {
		b.Write(hle32(uint32(gguf.TypeArray)))
		b.Write(hle64(1))
	}
	b.Write(hle32(uint32(gguf.TypeUint8)))
	b.Write(hle64(0))
	return b.Bytes()
}

// HostileGGUFCorpus is the corpus of crafted headers: each grows one
// dimension of the format (nesting depth, counts, string and array lengths,
// tensor counts, dimensions and their products) past what the reader
// accepts or past the file, or is well formed up to one bad byte after a
// large amount of structure.
func HostileGGUFCorpus() []HostileGGUF {
	return []HostileGGUF{
		// Nesting depth.
		{"arrays of arrays 200000 deep", gguf.ErrLimit, func() []byte { return DeepArraysGGUF(200000) }},
		{"arrays of arrays one past the limit", gguf.ErrLimit, func() []byte { return DeepArraysGGUF(gguf.MaxNesting + 1) }},
		{"nested arrays at the limit, then a bad type", gguf.ErrInvalid, func() []byte {
			// 8 levels (allowed), two wide at each; the last leaf's type is bad.
			b := hkv(1, "k", gguf.TypeArray)
			leaves := 0
			var level func(d int)
			level = func(d int) {
				if d == gguf.MaxNesting {
					if leaves++; leaves == 1<<(gguf.MaxNesting-1) {
						b.Write(hle32(99))
					} else {
						b.Write(hle32(uint32(gguf.TypeUint8)))
					}
					b.Write(hle64(0))
					return
				}
				b.Write(hle32(uint32(gguf.TypeArray)))
				b.Write(hle64(2))
				level(d + 1)
				level(d + 1)
			}
			level(1)
			return b.Bytes()
		}},

		// KV count.
		{"kv count 2^64-1", gguf.ErrLimit, func() []byte { return hhdr(0, math.MaxUint64) }},
		{"kv count past the file", gguf.ErrTooLarge, func() []byte { return hhdr(0, 1000) }},
		{"kv count one past the limit", gguf.ErrLimit, func() []byte {
			b := bytes.NewBuffer(hhdr(0, gguf.MaxKVs+1))
			for i := range gguf.MaxKVs + 1 {
				b.Write(hstr(string(rune('a' + i%26))))
				b.Write(hle32(uint32(gguf.TypeUint8)))
				b.WriteByte(0)
			}
			return b.Bytes()
		}},
		{"400000 entries then a duplicate key", gguf.ErrDuplicate, func() []byte {
			const n = 400000
			b := bytes.NewBuffer(hhdr(0, n+1))
			for i := range n + 1 {
				i = min(i, n-1) // the last repeats the one before
				b.Write(hstr(string([]byte{byte(i), byte(i >> 8), byte(i >> 16), 'k'})))
				b.Write(hle32(uint32(gguf.TypeUint8)))
				b.WriteByte(0)
			}
			return b.Bytes()
		}},

		// String and key lengths.
		{"string length 2^64-1", gguf.ErrLimit, func() []byte {
			return hcat(hkv(1, "k", gguf.TypeString).Bytes(), hle64(math.MaxUint64), make([]byte, 16))
		}},
		{"string length past the file", gguf.ErrTruncated, func() []byte {
			return hcat(hkv(1, "k", gguf.TypeString).Bytes(), hle64(1000), make([]byte, 16))
		}},
		{"string one past the limit", gguf.ErrLimit, func() []byte {
			return hcat(hkv(1, "k", gguf.TypeString).Bytes(), hle64(gguf.MaxStringLen+1), make([]byte, gguf.MaxStringLen+1))
		}},
		{"key one past the limit", gguf.ErrInvalid, func() []byte {
			return hcat(hhdr(0, 1), hstr(strings.Repeat("k", gguf.MaxKeyLen+1)), hle32(uint32(gguf.TypeUint8)), []byte{0})
		}},
		{"64 keys of 64 KiB, then the file ends", gguf.ErrTruncated, func() []byte {
			b := bytes.NewBuffer(hhdr(0, 65))
			for i := range 64 {
				b.Write(hstr(strings.Repeat(string(rune('a'+i%26)), gguf.MaxKeyLen-1) + string(rune('A'+i/26))))
				b.Write(hle32(uint32(gguf.TypeUint8)))
				b.WriteByte(0)
			}
			return b.Bytes()
		}},

		// Array lengths.
		{"array count 2^64-1", gguf.ErrLimit, func() []byte {
			return hcat(hkv(1, "k", gguf.TypeArray).Bytes(), hle32(uint32(gguf.TypeUint64)), hle64(math.MaxUint64))
		}},
		{"array count past the file", gguf.ErrTooLarge, func() []byte {
			return hcat(hkv(1, "k", gguf.TypeArray).Bytes(), hle32(uint32(gguf.TypeUint64)), hle64(1000))
		}},
		{"array one past the limit", gguf.ErrLimit, func() []byte {
			return hcat(hkv(1, "k", gguf.TypeArray).Bytes(), hle32(uint32(gguf.TypeUint8)), hle64(gguf.MaxArrayLen+1), make([]byte, gguf.MaxArrayLen+1))
		}},
		{"64 KiB key, a million empty strings, then a long one", gguf.ErrTruncated, func() []byte {
			// Field names built per element would cost the key's length for
			// each 8-byte element.
			b := hkv(1, strings.Repeat("\x00", gguf.MaxKeyLen), gguf.TypeArray)
			b.Write(hle32(uint32(gguf.TypeString)))
			const n = 1 << 20
			b.Write(hle64(n))
			b.Write(make([]byte, 8*(n-1)))
			b.Write(hle64(1000))
			return b.Bytes()
		}},
		{"64 KiB key, 200000 empty arrays, then a bad type", gguf.ErrInvalid, func() []byte {
			b := hkv(1, strings.Repeat("\xff", gguf.MaxKeyLen), gguf.TypeArray)
			b.Write(hle32(uint32(gguf.TypeArray)))
			const n = 200000
			b.Write(hle64(n))
			for range n - 1 {
				b.Write(hle32(uint32(gguf.TypeUint8)))
				b.Write(hle64(0))
			}
			b.Write(hle32(77))
			b.Write(hle64(0))
			return b.Bytes()
		}},
		{"four million bools, the last not 0 or 1", gguf.ErrInvalid, func() []byte {
			b := hkv(1, "k", gguf.TypeArray)
			b.Write(hle32(uint32(gguf.TypeBool)))
			const n = 1 << 22
			b.Write(hle64(n))
			b.Write(make([]byte, n-1))
			b.WriteByte(2)
			return b.Bytes()
		}},

		// Tensor counts.
		{"tensor count 2^62", gguf.ErrLimit, func() []byte { return hhdr(1<<62, 0) }},
		{"tensor count past the file", gguf.ErrTooLarge, func() []byte { return hhdr(1000, 0) }},
		{"tensor count one past the limit", gguf.ErrLimit, func() []byte {
			return hcat(hhdr(gguf.MaxTensors+1, 0), bytes.Repeat(htensor("t", []uint64{1}, tensor.F32, 0), gguf.MaxTensors+1))
		}},
		{"200000 tensors at one offset", gguf.ErrOverlap, func() []byte {
			const n = 200000
			b := bytes.NewBuffer(hhdr(n, 0))
			for i := range n {
				b.Write(htensor(string([]byte{byte(i), byte(i >> 8), byte(i >> 16), 't'}), []uint64{8}, tensor.F32, 0))
			}
			return hcat(hpad(b.Bytes()), make([]byte, 32))
		}},
		{"200000 tensors then a duplicate name", gguf.ErrDuplicate, func() []byte {
			const n = 200000
			b := bytes.NewBuffer(hhdr(n+1, 0))
			for i := range n {
				b.Write(htensor(string([]byte{byte(i), byte(i >> 8), byte(i >> 16), 't'}), []uint64{8}, tensor.F32, uint64(32*i)))
			}
			b.Write(htensor("\x00\x00\x00t", []uint64{8}, tensor.F32, 0))
			return hpad(b.Bytes())
		}},
		{"tensor name one past the limit", gguf.ErrInvalid, func() []byte {
			return hpad(hcat(hhdr(1, 0), htensor(strings.Repeat("n", gguf.MaxKeyLen+1), []uint64{1}, tensor.F32, 0)))
		}},

		// Dimensions.
		{"dims count 2^32-1", gguf.ErrInvalid, func() []byte {
			return hcat(hhdr(1, 0), hstr("t"), hle32(math.MaxUint32), make([]byte, 64))
		}},
		{"dims count one past the limit", gguf.ErrInvalid, func() []byte {
			return hpad(hcat(hhdr(1, 0), htensor("t", []uint64{1, 1, 1, 1, 1}, tensor.F32, 0)))
		}},
		{"dims product overflows", gguf.ErrInvalid, func() []byte {
			return hpad(hcat(hhdr(1, 0), htensor("t", []uint64{1 << 32, 1 << 32}, tensor.F32, 0)))
		}},
		{"dims product past the tensor limit", gguf.ErrLimit, func() []byte {
			return hpad(hcat(hhdr(1, 0), htensor("t", []uint64{1 << 30, 1 << 30}, tensor.F32, 0)))
		}},
		{"tensor sizes sum past the limit", gguf.ErrLimit, func() []byte {
			b := bytes.NewBuffer(hhdr(5, 0))
			for i := range 5 {
				b.Write(htensor(string(rune('a'+i)), []uint64{1 << 22, 1 << 22}, tensor.F32, uint64(i)<<45))
			}
			return hpad(b.Bytes())
		}},
		{"alignment 2^31", gguf.ErrInvalid, func() []byte {
			return hcat(hhdr(0, 1), hstr("general.alignment"), hle32(uint32(gguf.TypeUint32)), hle32(1<<31))
		}},
	}
}
