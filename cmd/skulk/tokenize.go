package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/tokenizer"
)

func newTokenizeCmd(s stdio) *cobra.Command {
	var modelPath, text string
	var noBOS, special, asJSON bool
	c := &cobra.Command{
		Use:   "tokenize --model FILE [--text TEXT]",
		Short: "Tokenize text with a GGUF model's vocabulary",
		Long: `Tokenize text with a GGUF model's vocabulary (a vocabulary-only file works): one
token per line, id and piece, or {"tokens":[...]} with --json. Without --text the
text is read from standard input.`,
		Example: `  skulk tokenize --model testdata/models/stories260K.gguf --text "Hello world" --json
  echo -n "Hello world" | skulk tokenize --model MODEL.gguf`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if modelPath == "" {
				return usageErrorf("--model is required: the GGUF file whose vocabulary to use")
			}
			if !cmd.Flags().Changed("text") {
				b, err := io.ReadAll(io.LimitReader(s.in, 64<<20))
				if err != nil {
					return fmt.Errorf("reading the text from standard input: %w", err)
				}
				text = strings.TrimSuffix(string(b), "\n")
			}
			tok, err := engine.OpenTokenizer(modelPath)
			if err != nil {
				return err
			}
			ids := tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: !noBOS, ParseSpecial: special})
			if asJSON {
				if ids == nil {
					ids = []int32{}
				}
				return json.NewEncoder(s.out).Encode(struct {
					Tokens []int32 `json:"tokens"`
				}{ids})
			}
			for _, id := range ids {
				fmt.Fprintf(s.out, "%d\t%s\n", id, strconv.Quote(tok.Piece(id, true)))
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&modelPath, "model", "", "GGUF file (a vocabulary-only file works)")
	f.StringVar(&text, "text", "", "text to tokenize (default: standard input, without its final newline)")
	f.BoolVar(&noBOS, "no-bos", false, "add no BOS/EOS (llama.cpp's add_special=false)")
	f.BoolVar(&special, "special", false, "recognise special tokens written in the text")
	f.BoolVar(&asJSON, "json", false, `print {"tokens":[...]}`)
	return c
}
