package modeladmin

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/models/shortname"
	"github.com/skulk/skulk/internal/platform/fault"
)

// cards is a catalog source of fixed cards.
type cards []catalog.Card

func (c cards) Cards() ([]catalog.Card, error) { return c, nil }

// TestResolver: a catalog id stays; a library name (bare, :latest, or
// with its quantization) becomes the catalog's id for it when the catalog
// holds it; a library name it does not hold is a 404 naming skulk pull;
// any other name a 404 with the nearest names, typed.
func TestResolver(t *testing.T) {
	lib, err := shortname.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	demo, err := catalog.BuiltinCard()
	if err != nil {
		t.Fatal(err)
	}
	pulled := demo
	pulled.ID, pulled.Builtin = "qwen3:8b", false
	cat, errs := catalog.Build(cards{demo, pulled})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	resolve := Resolver(func() *catalog.Catalog { return cat }, lib)
	tests := []struct {
		name, want string
		msg        []string // in the 404's message, when refused
		suggested  []string // the UnknownError's suggestions, when unknown
	}{
		{name: "stories260k", want: "stories260k"},
		{name: "qwen3:8b", want: "qwen3:8b"},
		{name: "qwen3", want: "qwen3:8b"},
		{name: "qwen3:latest", want: "qwen3:8b"},
		{name: "Qwen3:8B-Q4_K_M", want: "qwen3:8b"},
		{name: "qwen3:4b", msg: []string{"not pulled yet", "skulk pull qwen3:4b"}},
		{name: "gemma3", msg: []string{"skulk pull gemma3:4b"}},
		{name: "qwen4:8b", msg: []string{`unknown model "qwen4:8b"; did you mean`, "skulk pull qwen3:8b"}, suggested: []string{"qwen3:8b"}},
		{name: "no-such-model", msg: []string{`unknown model "no-such-model"`, "GET /models lists the catalog", "hf:OWNER/REPO"}, suggested: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolve(tt.name)
			if tt.want != "" {
				if err != nil || got != tt.want {
					t.Fatalf("= %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if err == nil || fault.ClassOf(err).HTTPStatus() != http.StatusNotFound {
				t.Fatalf("= %q, %v; want a 404", got, err)
			}
			for _, m := range tt.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("%q does not say %q", err, m)
				}
			}
			var u *shortname.UnknownError
			if isUnknown := errors.As(err, &u); isUnknown != (tt.suggested != nil) {
				t.Fatalf("UnknownError in the chain: %v", isUnknown)
			}
			for _, s := range tt.suggested {
				if !strings.Contains(strings.Join(u.Suggestions, " "), s) {
					t.Errorf("suggestions %q lack %s", u.Suggestions, s)
				}
			}
		})
	}
}
