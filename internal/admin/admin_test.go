package admin

import (
	"strings"
	"testing"
)

func TestQuotePath(t *testing.T) {
	long := strings.Repeat("a", 199) + "é" + strings.Repeat("b", 100) // é straddles byte 200
	for _, c := range []struct{ in, want string }{
		{"/m/x.gguf", `"/m/x.gguf"`},
		{"tab\there", `"tab\there"`},
		{strings.Repeat("a", 200), `"` + strings.Repeat("a", 200) + `"`},
		{strings.Repeat("a", 201), `"` + strings.Repeat("a", 200) + `"… (201 bytes)`},
		{long, `"` + strings.Repeat("a", 199) + `"… (301 bytes)`},
	} {
		if got := QuotePath(c.in); got != c.want {
			t.Errorf("QuotePath(%.20q...) = %s, want %s", c.in, got, c.want)
		}
	}
}
