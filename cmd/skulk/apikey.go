package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// apiKeyFileFlag is the flag every client command takes beside --host.
const apiKeyFileFlag = "api-key-file"

// keyFile is a client command's --api-key-file: the path, and whether the
// user named it (a named file must exist; the default one may not).
type keyFile struct {
	path string
	set  bool
}

// defaultKeyFile is where the client commands look for their key, and
// where skulk keys add saves one: the user's config directory
// ($XDG_CONFIG_HOME or ~/.config on Linux)/skulk/api-key; "" when the
// system names none.
func defaultKeyFile() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "skulk", "api-key")
}

// addKeyFileFlag adds --api-key-file to a client command.
func addKeyFileFlag(c *cobra.Command) {
	c.Flags().String(apiKeyFileFlag, defaultKeyFile(), "file of the API key to send, mode 0600 (read when named, or when SKULK_API_KEY is unset)")
}

// keyFileOf is the --api-key-file of cmd.
func keyFileOf(cmd *cobra.Command) keyFile {
	f := cmd.Flags().Lookup(apiKeyFileFlag)
	if f == nil {
		return keyFile{path: defaultKeyFile()}
	}
	return keyFile{path: f.Value.String(), set: f.Changed}
}

// errKeyFileMode is matched (errors.Is) when a key file is readable by
// others.
var errKeyFileMode = errors.New("API key file readable by others")

// clientKey is the key a client command sends and where it comes from: a
// named --api-key-file, else SKULK_API_KEY, else the default key file when
// it exists; "" when none. A key file must be a regular file that only its
// owner can read (mode 0600 or stricter).
func clientKey(kf keyFile, getenv func(string) string) (key, source string, err error) {
	if !kf.set {
		if k := strings.TrimSpace(getenv("SKULK_API_KEY")); k != "" {
			return k, "SKULK_API_KEY", nil
		}
	}
	if kf.path == "" {
		return "", "", nil
	}
	k, err := readKeyFile(kf.path)
	if errors.Is(err, fs.ErrNotExist) && !kf.set {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	return k, kf.path, nil
}

// readKeyFile reads a key from path, refusing a file others may read.
func readKeyFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("no API key file at %s: save a key there (skulk keys add NAME --save) or name another with --api-key-file: %w", path, err)
		}
		return "", fmt.Errorf("reading the API key file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("reading the API key file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("the API key file %s is not a regular file", path)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("%w: %s has mode %04o, so other users may read the key; run chmod 600 %s and try again", errKeyFileMode, path, perm, path)
	}
	b := make([]byte, 4096)
	n, err := f.Read(b)
	if err != nil && n == 0 {
		return "", fmt.Errorf("the API key file %s is empty: save a key there (skulk keys add NAME --save)", path)
	}
	key := strings.TrimSpace(string(b[:n]))
	if key == "" || strings.ContainsAny(key, " \t\r\n") {
		return "", fmt.Errorf("the API key file %s holds no key or more than one line; it holds one key alone", path)
	}
	return key, nil
}

// saveKeyFile writes key to path with mode 0600 (its directory 0700),
// replacing the file at once; it refuses to replace another key.
func saveKeyFile(path, key string) error {
	if err := checkSavable(path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("saving the API key: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".api-key-*")
	if err != nil {
		return fmt.Errorf("saving the API key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("saving the API key: %w", err)
	}
	if _, err := tmp.WriteString(key + "\n"); err != nil {
		tmp.Close()
		return fmt.Errorf("saving the API key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("saving the API key: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("saving the API key: %w", err)
	}
	return nil
}

// checkSavable refuses a path that already holds a file: it may hold the
// only copy of another key.
func checkSavable(path string) error {
	if path == "" {
		return errors.New("there is no config directory to save the key in (set HOME or XDG_CONFIG_HOME), or name a file with --api-key-file")
	}
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s already exists and may hold another key: remove it first, or save to another file with --api-key-file PATH", path)
	}
	return nil
}
