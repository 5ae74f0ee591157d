package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/model"
)

func newDevLogitsCmd(s stdio) *cobra.Command {
	c := &cobra.Command{Use: "logits --model FILE --tokens IDS", Short: "Print the full logits at every position of a token batch (JSON)",
		Example: "  skulk dev logits --model MODEL.gguf --tokens 1,403,407", Args: noArgs}
	fs := c.Flags()
	modelPath := fs.String("model", "", "GGUF model file")
	tokens := fs.String("tokens", "", "comma-separated token ids, evaluated as one batch")
	threads := fs.Int("threads", 0, "worker threads (0 = physical cores)")
	exact := fs.Bool("exact-activations", false, "keep matmul activations in F32 (no llama.cpp-style rounding)")
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if *modelPath == "" || *tokens == "" {
			return &exitError{code: 2, err: fmt.Errorf("--model and --tokens are required")}
		}
		var ids []int32
		for _, f := range strings.Split(*tokens, ",") {
			v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
			if err != nil {
				return &exitError{code: 2, err: fmt.Errorf("--tokens: %q is not a token id", f)}
			}
			ids = append(ids, int32(v))
		}
		ecfg, err := engineConfig()
		if err != nil {
			return err
		}
		m, err := engine.Open(*modelPath, engine.Options{Threads: *threads, ExactActivations: *exact, Kernels: ecfg.Kernels, NoPack: ecfg.NoPack})
		if err != nil {
			return err
		}
		defer m.Close()
		res, err := m.Shard.Forward(m.Shard.NewCache(len(ids)), model.Batch{Tokens: ids, AllLogits: true})
		if err != nil {
			return err
		}
		nv := m.Config.NVocab
		rows := make([][]float32, len(ids))
		for i := range rows {
			rows[i] = res.Logits[i*nv : (i+1)*nv]
		}
		return json.NewEncoder(s.out).Encode(struct {
			Logits [][]float32 `json:"logits"`
		}{rows})
	}
	return c
}
