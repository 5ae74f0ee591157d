package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/skulk/skulk/internal/engine/encoder"
	"github.com/skulk/skulk/internal/engine/gguf"
)

// runDevEmbed embeds one text with a bert GGUF the way llama-embedding does
// ([CLS] … [SEP], the model's pooling, L2-normalised) and prints
// {"tokens":[...],"embedding":[...]}.
func newDevEmbedCmd(s stdio) *cobra.Command {
	c := &cobra.Command{Use: "embed --model FILE --text TEXT", Short: "Embed text with a bert GGUF: token ids and the normalised embedding",
		Example: "  skulk dev embed --model bert.gguf --text \"Hello world\"", Args: noArgs}
	fs := c.Flags()
	modelPath := fs.String("model", "", "GGUF file of a bert encoder")
	text := fs.String("text", "", "text to embed")
	threads := fs.Int("threads", 0, "worker goroutines per matmul (0 = GOMAXPROCS)")
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if *modelPath == "" || *text == "" {
			return &exitError{code: 2, err: fmt.Errorf("--model and --text are required")}
		}
		if *threads < 0 {
			return &exitError{code: 2, err: fmt.Errorf("--threads must be ≥ 0")}
		}
		ecfg, err := engineConfig()
		if err != nil {
			return err
		}
		f, err := gguf.Open(*modelPath)
		if err != nil {
			return err
		}
		defer f.Close()
		enc, err := encoder.Open(f, encoder.Options{Threads: *threads, Kernels: ecfg.Kernels})
		if err != nil {
			return err
		}
		ids := enc.Tokenize(*text)
		emb, err := enc.Embed(ids)
		if err != nil {
			return err
		}
		return json.NewEncoder(s.out).Encode(struct {
			Tokens    []int32   `json:"tokens"`
			Embedding []float32 `json:"embedding"`
		}{ids, emb.Normalized})
	}
	return c
}
