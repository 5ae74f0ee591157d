package hub

import (
	"errors"
	"fmt"
)

// Error classes a caller can test with errors.Is.
var (
	// ErrOffline: SKULK_OFFLINE is set, so the Hub is never contacted.
	ErrOffline = errors.New("offline mode")
	// ErrUnauthorized: the Hub refused the request (401/403): the repository
	// is gated or private, or the token is wrong.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrNotFound: no such repository, revision or file (404).
	ErrNotFound = errors.New("not found")
	// ErrIntegrity: downloaded bytes do not match the Hub's checksum.
	ErrIntegrity = errors.New("integrity check failed")
	// ErrNoSpace: the download would not leave the required free space.
	ErrNoSpace = errors.New("not enough disk space")
)

// OfflineError is returned, without touching the network, by every call
// that would need the Hub while offline mode is on.
type OfflineError struct {
	Op string // what needed the network
}

func (e *OfflineError) Error() string {
	return fmt.Sprintf("hub: %s needs the Hugging Face Hub, but offline mode is on (SKULK_OFFLINE); unset it, or copy the model directory with its .skulk/installed-card.json onto this node", e.Op)
}

func (e *OfflineError) Unwrap() error { return ErrOffline }

// StatusError is an unexpected HTTP status from the Hub or its CDN.
type StatusError struct {
	Op       string // e.g. "repository info", "download"
	Repo     string
	URL      string
	Code     int
	HasToken bool   // whether the request carried HF_TOKEN
	Detail   string // the Hub's error message (X-Error-Message), bounded
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("hub: %s %s: HTTP %d", e.Op, e.Repo, e.Code)
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	switch {
	case (e.Code == 401 || e.Code == 403) && e.HasToken:
		return msg + ": the Hub refused the token in HF_TOKEN; check that it is valid and that its account has accepted the repository's terms on the Hub"
	case e.Code == 401 || e.Code == 403:
		return msg + ": the repository is gated or private; accept its terms on the Hub and set HF_TOKEN in the node's environment to an access token"
	case e.Code == 404:
		return msg + ": no such repository, revision or file; check the name (owner/name, case matters)"
	}
	return msg
}

// Unwrap maps the status to an error class.
func (e *StatusError) Unwrap() error {
	switch e.Code {
	case 401, 403:
		return ErrUnauthorized
	case 404:
		return ErrNotFound
	}
	return nil
}

// HeaderTooLargeError says a GGUF header did not end within the limit.
type HeaderTooLargeError struct {
	Repo, File string
	Limit      int64
}

func (e *HeaderTooLargeError) Error() string {
	return fmt.Sprintf("hub: %s/%s: the GGUF header does not end within %d bytes; refusing to read more (the file is corrupt or not a model)", e.Repo, e.File, e.Limit)
}

// IntegrityError says a file's bytes do not match what the Hub published.
// The bad bytes are deleted, never published.
type IntegrityError struct {
	Repo, File string
	Want, Got  string
	Detail     string
}

func (e *IntegrityError) Error() string {
	if e.Detail != "" {
		return fmt.Sprintf("hub: %s/%s: %s; the partial file was discarded, pull again", e.Repo, e.File, e.Detail)
	}
	return fmt.Sprintf("hub: %s/%s: checksum %s, the Hub published %s; the file was discarded, pull again (a repeat means a corrupting proxy or disk)", e.Repo, e.File, e.Got, e.Want)
}

func (e *IntegrityError) Unwrap() error { return ErrIntegrity }

// SpaceError refuses a download before any transfer: what remains to fetch
// would leave less than the headroom free.
type SpaceError struct {
	Model    string
	Dir      string
	Need     int64 // bytes still to download
	Free     int64 // bytes free on Dir's file system, less other downloads in flight
	Headroom int64
}

func (e *SpaceError) Error() string {
	return fmt.Sprintf("hub: download of %s refused: it needs %d more bytes in %s, which has %d free, and %d must stay free; free disk space or remove models (skulk models rm)", e.Model, e.Need, e.Dir, e.Free, e.Headroom)
}

func (e *SpaceError) Unwrap() error { return ErrNoSpace }

// HTTPStatus is 507 Insufficient Storage.
func (e *SpaceError) HTTPStatus() int { return 507 }
