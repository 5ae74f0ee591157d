package main

import (
	"strings"
	"testing"
)

func TestResolveHost(t *testing.T) {
	tests := []struct {
		flag, env, want string
	}{
		{"", "", "localhost:52415"},
		{"", "10.0.0.5", "10.0.0.5:52415"},
		{"", "10.0.0.5:8080", "10.0.0.5:8080"},
		{"", ":9000", "localhost:9000"},
		{"", "http://node.lan", "http://node.lan:52415"},
		{"", "https://node.lan:443/skulk", "https://node.lan:443/skulk"},
		{"127.0.0.1:1", "10.0.0.5", "127.0.0.1:1"}, // --host wins
		{"", "[::1]", "[::1]:52415"},
	}
	for _, tt := range tests {
		env := func(k string) string {
			if k == "SKULK_HOST" {
				return tt.env
			}
			return ""
		}
		if got := resolveHost(tt.flag, env); got != tt.want {
			t.Errorf("--host %q SKULK_HOST %q: got %q, want %q", tt.flag, tt.env, got, tt.want)
		}
	}
}

// TestExplain: a node's refusals come out in the CLI's words, naming what
// to do, not an HTTP route.
func TestExplain(t *testing.T) {
	tests := []struct {
		name, key, path string
		e               apiError
		want            string
	}{
		{"no_key", "", "/state", apiError{Status: 401, Message: "this cluster requires an API key"}, "set SKULK_API_KEY"},
		{"wrong_key", "k", "/state", apiError{Status: 401, Message: "the API key is not valid"}, "does not accept the key in SKULK_API_KEY"},
		{"not_loopback", "", "/state", apiError{Status: 403, Message: "this node serves clients on other addresses only with an API key: …"}, "serves only clients on its own machine"},
		{"inference_key", "k", "/place_instance", apiError{Status: 403, Message: `the key "a" may use inference and read-only routes; POST /place_instance needs the admin key (SKULK_API_KEY)`}, "needs the cluster's admin key"},
		{"no_instance", "", "/instance/abc", apiError{Status: 404, Message: "no instance abc"}, "'skulk ps' lists the instances"},
		{"no_model", "", "/v1/chat/completions", apiError{Status: 404, Message: `model "x" not found`}, "'skulk models list' shows the catalog"},
		{"loading", "", "/v1/chat/completions", apiError{Status: 503, Message: "model x is still loading; retry in a moment", RetryAfter: "1"}, "try again in 1 s"},
		{"route_named", "", "/place_instance", apiError{Status: 409, Message: "node n runs 16 runners; see GET /state"}, "see skulk ps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &apiClient{base: "http://h:1", key: tt.key}
			got := c.explain("GET", tt.path, &tt.e).Error()
			if !strings.Contains(got, tt.want) {
				t.Fatalf("got %q, want %q in it", got, tt.want)
			}
			for _, route := range []string{"GET /", "POST /", "DELETE /"} {
				if strings.Contains(got, route) {
					t.Errorf("%q names an HTTP route", got)
				}
			}
		})
	}
}
