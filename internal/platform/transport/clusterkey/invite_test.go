package clusterkey

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestInviteRoundTrip(t *testing.T) {
	for _, inv := range []Invite{
		{Secret: Generate()},
		{Secret: Generate(), Peers: []string{"10.0.0.5:52416", "[fd00::1]:52416"}},
	} {
		line := inv.String()
		if !strings.HasPrefix(line, InvitePrefix) || strings.ContainsAny(line, " \n\t") {
			t.Fatalf("not one copyable line: %q", line)
		}
		got, err := ParseInvite("  " + line + "\n")
		if err != nil {
			t.Fatal(err)
		}
		if got.Secret != inv.Secret || !slices.Equal(got.Peers, inv.Peers) {
			t.Fatalf("got %+v, want %+v", got, inv)
		}
	}
}

func TestParseInviteRefuses(t *testing.T) {
	good := Invite{Secret: Generate(), Peers: []string{"10.0.0.5:52416"}}.String()
	for name, line := range map[string]string{
		"empty":        "",
		"no prefix":    strings.TrimPrefix(good, InvitePrefix),
		"other format": "skulk2:" + strings.TrimPrefix(good, InvitePrefix),
		"cut short":    good[:len(good)-7],
		"not base64":   InvitePrefix + "!!!",
		"short key":    Invite{Secret: "short"}.String(),
		"bad peer":     Invite{Secret: Generate(), Peers: []string{"no-port"}}.String(),
		"huge":         InvitePrefix + strings.Repeat("A", 10000),
	} {
		_, err := ParseInvite(line)
		if !errors.Is(err, ErrBadInvite) {
			t.Errorf("%s: err %v, want ErrBadInvite", name, err)
			continue
		}
		if len(line) > len(InvitePrefix)+8 && strings.Contains(err.Error(), line[len(InvitePrefix):]) {
			t.Errorf("%s: the error quotes the invite: %v", name, err)
		}
	}
}

func TestGenerateIsRandomAndLongEnough(t *testing.T) {
	a, b := Generate(), Generate()
	if a == b || len(a) < 40 {
		t.Fatalf("%q %q", a, b)
	}
}

func TestFingerprintSeparatesClustersAndHidesTheKey(t *testing.T) {
	a, _ := New("alpha-secret-key", NetworkVersion)
	a2, _ := New("alpha-secret-key", NetworkVersion)
	b, _ := New("bravo-secret-key", NetworkVersion)
	if a.Fingerprint() != a2.Fingerprint() || a.Fingerprint() == b.Fingerprint() {
		t.Fatal("the fingerprint is not a function of the key")
	}
	if strings.Contains(a.Fingerprint(), "alpha") {
		t.Fatal("the fingerprint shows the key")
	}
}

func FuzzParseInvite(f *testing.F) {
	f.Add(Invite{Secret: Generate(), Peers: []string{"10.0.0.5:52416"}}.String())
	f.Add(InvitePrefix)
	f.Add(InvitePrefix + "e30")
	f.Fuzz(func(t *testing.T, line string) {
		inv, err := ParseInvite(line)
		if err != nil {
			if !errors.Is(err, ErrBadInvite) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		again, err := ParseInvite(inv.String())
		if err != nil || again.Secret != inv.Secret || !slices.Equal(again.Peers, inv.Peers) {
			t.Fatalf("round trip of an accepted invite: %+v %v", again, err)
		}
	})
}
