package event

import (
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/skulk/skulk/internal/platform/ids"
)

// Run-time key kinds: a key added to or removed from the cluster while it
// runs (skulk keys add, skulk keys rm), without restarting a node.
const (
	KindAddAPIKey     Kind = "AddAPIKey"
	KindRemoveAPIKey  Kind = "RemoveAPIKey"
	KindAPIKeyAdded   Kind = "APIKeyAdded"
	KindAPIKeyRemoved Kind = "APIKeyRemoved"
)

// MaxAddedAPIKeys bounds the keys added at run time in a cluster.
const MaxAddedAPIKeys = 256

// MaxKeyNameBytes bounds a run-time key's name.
const MaxKeyNameBytes = 64

// AddedAPIKey is a key added at run time, as the State holds it under its
// name: its scope and digest (never the key), the node whose API generated
// it and the master's clock when it was added.
type AddedAPIKey struct {
	Scope    string     `json:"scope"`
	Digest   string     `json:"digest"`
	Node     ids.NodeID `json:"node"`
	AtUnixMs int64      `json:"at_unix_ms"`
}

// AddAPIKey asks the master to add a key at run time. The node that
// handles the request generates the key and sends only its digest; Node is
// that node.
type AddAPIKey struct {
	ID   ids.CommandID `json:"id"`
	Key  APIKey        `json:"key"`
	Node ids.NodeID    `json:"node"`
}

// RemoveAPIKey asks the master to remove a key added at run time; a key
// configured in a node's environment is refused.
type RemoveAPIKey struct {
	ID   ids.CommandID `json:"id"`
	Name string        `json:"name"`
}

// APIKeyAdded adds a run-time key to the State: every member enforces it
// from the moment it applies the event.
type APIKeyAdded struct {
	Key      APIKey     `json:"key"`
	Node     ids.NodeID `json:"node"`
	AtUnixMs int64      `json:"at_unix_ms"`
}

// APIKeyRemoved takes a run-time key out of the State.
type APIKeyRemoved struct {
	Name string `json:"name"`
}

func (AddAPIKey) Kind() Kind     { return KindAddAPIKey }
func (RemoveAPIKey) Kind() Kind  { return KindRemoveAPIKey }
func (APIKeyAdded) Kind() Kind   { return KindAPIKeyAdded }
func (APIKeyRemoved) Kind() Kind { return KindAPIKeyRemoved }

func (c AddAPIKey) CommandID() ids.CommandID    { return c.ID }
func (c RemoveAPIKey) CommandID() ids.CommandID { return c.ID }

func (AddAPIKey) isCommand()    {}
func (RemoveAPIKey) isCommand() {}
func (APIKeyAdded) isEvent()    {}
func (APIKeyRemoved) isEvent()  {}

func (c AddAPIKey) Validate() error {
	return firstInvalid(c.Kind(),
		check{"id", c.ID.Validate()},
		check{"key", validateAddedKey(c.Key)},
		check{"node", c.Node.Validate()},
	)
}

func (c RemoveAPIKey) Validate() error {
	return firstInvalid(c.Kind(),
		check{"id", c.ID.Validate()},
		check{"name", ValidateKeyName(c.Name)},
	)
}

func (e APIKeyAdded) Validate() error {
	return firstInvalid(e.Kind(),
		check{"key", validateAddedKey(e.Key)},
		check{"node", e.Node.Validate()},
		check{"at_unix_ms", unixMs(e.AtUnixMs)},
	)
}

func (e APIKeyRemoved) Validate() error {
	return firstInvalid(e.Kind(), check{"name", ValidateKeyName(e.Name)})
}

// Validate checks a run-time key as the State holds it under name.
func (k AddedAPIKey) Validate(name string) error {
	return APIKeyAdded{Key: APIKey{Name: name, Scope: k.Scope, Digest: k.Digest}, Node: k.Node, AtUnixMs: k.AtUnixMs}.Validate()
}

func validateAddedKey(k APIKey) error {
	if err := ValidateKeyName(k.Name); err != nil {
		return fmt.Errorf("name: %w", err)
	}
	if err := enum(k.Scope, ScopeAdmin, ScopeInference); err != nil {
		return fmt.Errorf("scope: %w", err)
	}
	if b, err := hex.DecodeString(k.Digest); err != nil || len(b) != 32 {
		return errors.New("digest: want 64 hex digits")
	}
	return nil
}

// ValidateKeyName checks the name of a run-time key: 1 to 64 letters,
// digits, '.', '_' or '-', starting with a letter or digit, so that it is
// safe in a URL path, a log line and a table.
func ValidateKeyName(name string) error {
	if name == "" || len(name) > MaxKeyNameBytes {
		return fmt.Errorf("a key name has 1 to %d characters, got %d", MaxKeyNameBytes, len(name))
	}
	for i, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case i > 0 && (r == '.' || r == '_' || r == '-'):
		default:
			return fmt.Errorf("a key name has only letters, digits, '.', '_' and '-' and starts with a letter or digit; %q does not", truncate(name))
		}
	}
	return nil
}
