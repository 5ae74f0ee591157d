package gguf

import "math"

// String returns a string metadata value.
func (f *File) String(key string) (string, bool) {
	v, ok := f.Get(key)
	if !ok {
		return "", false
	}
	s, ok := v.V.(string)
	return s, ok
}

// Uint returns an integer metadata value of any integer type, if it is
// non-negative.
func (f *File) Uint(key string) (uint64, bool) {
	v, ok := f.Get(key)
	if !ok {
		return 0, false
	}
	if u, ok := v.V.(uint64); ok {
		return u, true
	}
	i, ok := asInt64(v.V)
	if !ok || i < 0 {
		return 0, false
	}
	return uint64(i), true
}

// Int returns an integer metadata value of any integer type that fits in int64.
func (f *File) Int(key string) (int64, bool) {
	v, ok := f.Get(key)
	if !ok {
		return 0, false
	}
	return asInt64(v.V)
}

// Bool returns a bool metadata value.
func (f *File) Bool(key string) (bool, bool) {
	v, ok := f.Get(key)
	if !ok {
		return false, false
	}
	b, ok := v.V.(bool)
	return b, ok
}

// Float returns a float32 or float64 metadata value as float64.
func (f *File) Float(key string) (float64, bool) {
	v, ok := f.Get(key)
	if !ok {
		return 0, false
	}
	switch x := v.V.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// Array returns an array metadata value.
func (f *File) Array(key string) (Array, bool) {
	v, ok := f.Get(key)
	if !ok {
		return Array{}, false
	}
	a, ok := v.V.(Array)
	return a, ok
}

// Strings returns a string array metadata value.
func (f *File) Strings(key string) ([]string, bool) {
	a, ok := f.Array(key)
	if !ok {
		return nil, false
	}
	s, ok := a.Values.([]string)
	return s, ok
}

// Float32s returns a float32 array (float64 arrays are converted).
func (f *File) Float32s(key string) ([]float32, bool) {
	a, ok := f.Array(key)
	if !ok {
		return nil, false
	}
	switch x := a.Values.(type) {
	case []float32:
		return x, true
	case []float64:
		out := make([]float32, len(x))
		for i, v := range x {
			out[i] = float32(v)
		}
		return out, true
	}
	return nil, false
}

// Int32s returns an integer array of any integer element type whose values
// fit in int32.
func (f *File) Int32s(key string) ([]int32, bool) {
	a, ok := f.Array(key)
	if !ok {
		return nil, false
	}
	if x, ok := a.Values.([]int32); ok {
		return x, true
	}
	n := a.Len()
	out := make([]int32, n)
	for i := 0; i < n; i++ {
		var v int64
		switch x := a.Values.(type) {
		case []uint8:
			v = int64(x[i])
		case []int8:
			v = int64(x[i])
		case []uint16:
			v = int64(x[i])
		case []int16:
			v = int64(x[i])
		case []uint32:
			v = int64(x[i])
		case []uint64:
			if x[i] > math.MaxInt32 {
				return nil, false
			}
			v = int64(x[i])
		case []int64:
			v = x[i]
		default:
			return nil, false
		}
		if v < math.MinInt32 || v > math.MaxInt32 {
			return nil, false
		}
		out[i] = int32(v)
	}
	return out, true
}

// Architecture returns general.architecture.
func (f *File) Architecture() string {
	s, _ := f.String("general.architecture")
	return s
}
