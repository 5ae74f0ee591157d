package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/engine/bench"
)

// TestBenchJSON runs `skulk bench --json` for a few tokens and checks the
// object has the fields bench/compare.sh reads.
func TestBenchJSON(t *testing.T) {
	var out, errb bytes.Buffer
	err := runArgs([]string{"bench", "--model", repoFile("testdata", "models", "stories260K.gguf"), "--threads", "1",
		"--prompt-tokens", "4", "--gen-tokens", "2", "--repeat", "2", "--json"}, stdio{strings.NewReader(""), &out, &errb})
	if err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	var res bench.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if res.Engine != "skulk" || res.Threads != 1 || res.PromptTokens != 4 || res.GenTokens != 2 || res.Repeat != 2 {
		t.Errorf("result %+v", res)
	}
	if res.WeightBytes <= 0 || len(res.Prefill.Runs) != 2 || len(res.Decode.Runs) != 2 || res.Decode.Median <= 0 {
		t.Errorf("result %+v", res)
	}
	out.Reset()
	if err := runArgs([]string{"bench", "--model", repoFile("testdata", "models", "stories260K.gguf"), "--threads", "1",
		"--prompt-tokens", "4", "--gen-tokens", "2", "--repeat", "1"}, stdio{strings.NewReader(""), &out, &errb}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "pp4") || !strings.Contains(out.String(), "tg2") {
		t.Errorf("table:\n%s", out.String())
	}
}
