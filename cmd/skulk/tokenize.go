package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/tokenizer"
)

func runTokenize(ctx context.Context, args []string, s stdio) error {
	fs := newFlagSet("tokenize", s)
	modelPath := fs.String("model", "", "GGUF file (a vocabulary-only file works)")
	text := fs.String("text", "", "text to tokenize")
	noBOS := fs.Bool("no-bos", false, "add no BOS/EOS (llama.cpp's add_special=false)")
	special := fs.Bool("special", false, "recognise special tokens written in the text")
	asJSON := fs.Bool("json", false, `print {"tokens":[...]}`)
	if err := fs.Parse(args); err != nil {
		return usageError(err)
	}
	if *modelPath == "" {
		return &exitError{code: 2, err: fmt.Errorf("--model is required")}
	}
	tok, err := engine.OpenTokenizer(*modelPath)
	if err != nil {
		return err
	}
	ids := tok.Encode(*text, tokenizer.EncodeOptions{AddSpecial: !*noBOS, ParseSpecial: *special})
	if *asJSON {
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
}

// usageError maps a flag parsing error to exit status 2 (flag already
// printed the message and usage).
func usageError(err error) error {
	return &exitError{code: 2, err: fmt.Errorf("")}
}
