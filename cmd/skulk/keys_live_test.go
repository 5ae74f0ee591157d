package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLiveKeys drives skulk keys and --api-key-file against a node: the
// first admin key, saved with --save, keeps the local user in (the saved
// file is used for requests), a key file others may read is refused with
// the chmod to run, an inference key is listed and removed, and a key
// configured in a node's environment is refused removal naming its
// variable.
func TestLiveKeys(t *testing.T) {
	n := startLiveNode(t)
	config := t.TempDir()
	file := filepath.Join(config, "skulk", "api-key")
	mine := []string{"XDG_CONFIG_HOME=" + config}
	run := func(env []string, args ...string) (int, string, string) {
		t.Helper()
		return n.skulk(t, "", env, args...)
	}

	code, out, errs := run(mine, "keys", "add", "ops", "--save")
	key := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(key, "sk-skulk-") || !strings.Contains(errs, "saved in "+file) {
		t.Fatalf("keys add ops --save: exit %d\nstdout %q\nstderr %q", code, out, errs)
	}
	st, err := os.Stat(file)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the saved key file: %v %v, want mode 0600", st, err)
	}
	if b, _ := os.ReadFile(file); strings.TrimSpace(string(b)) != key {
		t.Fatalf("the file holds %q, the command printed %q", b, key)
	}
	// Every request needs a key now: the saved one is sent.
	if code, out, errs := run(mine, "ps"); code != 0 {
		t.Fatalf("ps with the saved key: exit %d %q %q", code, out, errs)
	}
	if code, _, errs := run([]string{"XDG_CONFIG_HOME=" + t.TempDir()}, "ps"); code != 1 || !strings.Contains(errs, "requires an API key") {
		t.Fatalf("ps without a key: exit %d %q", code, errs)
	}
	if code, _, errs := run(nil, "ps", "--api-key-file", file); code != 0 {
		t.Fatalf("ps --api-key-file: exit %d %q", code, errs)
	}
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(mine, "ps"); code != 1 || !strings.Contains(errs, "chmod 600 "+file) {
		t.Fatalf("ps with a world-readable key file: exit %d %q", code, errs)
	}
	if err := os.Chmod(file, 0o600); err != nil {
		t.Fatal(err)
	}
	// SKULK_API_KEY still works, and wins over the default file.
	if code, _, errs := run(append(mine, "SKULK_API_KEY="+key), "ps"); code != 0 {
		t.Fatalf("ps with SKULK_API_KEY: exit %d %q", code, errs)
	}
	if code, _, errs := run(append(mine, "SKULK_API_KEY=not-the-key"), "ps"); code != 1 || !strings.Contains(errs, "does not accept the key in SKULK_API_KEY") {
		t.Fatalf("ps with a wrong SKULK_API_KEY: exit %d %q", code, errs)
	}
	// --save never replaces a key file, and refuses before adding a key.
	if code, _, errs := run(mine, "keys", "add", "ops2", "--save"); code != 1 || !strings.Contains(errs, "already exists") {
		t.Fatalf("keys add --save over a key file: exit %d %q", code, errs)
	}

	code, out, errs = run(mine, "keys", "add", "ci", "--inference")
	ci := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(ci, "sk-skulk-") || strings.Contains(errs, "saved") {
		t.Fatalf("keys add ci --inference: exit %d %q %q", code, out, errs)
	}
	if code, _, errs := run([]string{"SKULK_API_KEY=" + ci}, "keys", "list"); code != 1 || !strings.Contains(errs, "admin key") {
		t.Fatalf("keys list with an inference key: exit %d %q", code, errs)
	}
	code, out, errs = run(mine, "keys", "list")
	if code != 0 || !strings.Contains(out, "ops   admin") || !strings.Contains(out, "ci    inference  added at run time") ||
		strings.Contains(out, key) || strings.Contains(out, ci) {
		t.Fatalf("keys list: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := run(mine, "keys", "rm", "ci"); code != 0 || !strings.Contains(out, "removed key ci") {
		t.Fatalf("keys rm ci: exit %d %q %q", code, out, errs)
	}
	if code, _, errs := run([]string{"SKULK_API_KEY=" + ci}, "ls"); code != 1 || !strings.Contains(errs, "does not accept the key") {
		t.Fatalf("ls with a removed key: exit %d %q", code, errs)
	}
	if code, _, errs := run(mine, "keys", "rm", "nope"); code != 1 || !strings.Contains(errs, "no key named nope") {
		t.Fatalf("keys rm nope: exit %d %q", code, errs)
	}

	// A key from a node's environment is removed there, not here.
	env := startNode(t, []string{"SKULK_API_KEY=env-admin-key-1"}, "--api-addr", "127.0.0.1:0", "--gossip-addr", "127.0.0.1:0", "--quic-addr", "127.0.0.1:0")
	envKey := []string{"SKULK_API_KEY=env-admin-key-1"}
	// The node reports its configured keys to the State once it leads.
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, out, _ = env.skulk(t, "", envKey, "keys", "list")
		if code == 0 && strings.Contains(out, "SKULK_API_KEY (environment)") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("keys list of a configured key: exit %d %q", code, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	code, _, errs = env.skulk(t, "", envKey, "keys", "rm", "admin")
	if code != 1 || !strings.Contains(errs, "configured with SKULK_API_KEY on node") || !strings.Contains(errs, "restart that node") {
		t.Fatalf("keys rm of a configured key: exit %d %q", code, errs)
	}
}
