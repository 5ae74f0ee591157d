//go:build !linux

package dataplane

import (
	"context"
	"os"
)

// MaxArenaCeiling bounds the sparse arena.
const MaxArenaCeiling = 1 << 40

// Arena is unavailable off Linux.
type Arena struct{}

// NewArena reports ErrUnsupported off Linux.
func NewArena(string, uint64) (*Arena, error) { return nil, ErrUnsupported }

// MapArena reports ErrUnsupported off Linux.
func MapArena(*os.File) (*Arena, error) { return nil, ErrUnsupported }

func (a *Arena) Bytes() []byte  { return nil }
func (a *Arena) Size() uint64   { return 0 }
func (a *Arena) File() *os.File { return nil }
func (a *Arena) Close() error   { return ErrUnsupported }

// Doorbell is unavailable off Linux.
type Doorbell struct{}

// NewDoorbell reports ErrUnsupported off Linux.
func NewDoorbell() (*Doorbell, error) { return nil, ErrUnsupported }

// DoorbellFromFile reports ErrUnsupported off Linux.
func DoorbellFromFile(*os.File) (*Doorbell, error) { return nil, ErrUnsupported }

func (d *Doorbell) File() (*os.File, error)    { return nil, ErrUnsupported }
func (d *Doorbell) Ring() error                { return ErrUnsupported }
func (d *Doorbell) Wait(context.Context) error { return ErrUnsupported }
func (d *Doorbell) Close() error               { return ErrUnsupported }
