package tokenizer

// span is a half-open range of code point indices.
type span struct{ start, end int }

// splitCtx is the text being pre-tokenized: its code points and their flags.
type splitCtx struct {
	rs []rune
	fl []uint16
}

func (c *splitCtx) flags(p, a, e int) uint16 {
	if p >= a && p < e {
		return c.fl[p]
	}
	return flagsNone
}

// pass refines every span of in into one or more spans appended to out, as
// one regular expression of llama.cpp's list does.
type pass func(c *splitCtx, in, out []span) []span

// preTokenizer is one tokenizer.ggml.pre family: its split passes and the
// vocabulary flags llama.cpp sets with it.
type preTokenizer struct {
	passes       []pass
	cleanSpaces  bool // detokenizer removes spaces before punctuation
	ignoreMerges bool // a word that is a token is emitted whole
	addBOS       bool // default of add_bos_token
	noBOS        bool // the family has no BOS token
}

// lookupPre maps a tokenizer.ggml.pre name to its family. Names llama.cpp
// knows but this package does not implement are an UnsupportedError.
func lookupPre(name string) (*preTokenizer, error) {
	p := &preTokenizer{cleanSpaces: true}
	switch name {
	case "", "default":
		p.passes = []pass{
			regexPass(runOf(isDefaultPunct, 1, 0)),
			splitGPT2,
			regexPass(runOf(reN, 1, 0)),
			regexPass(runOf(isASCIIDigit, 3, 3)),
		}
	case "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano":
		p.passes = []pass{splitLlama3(3)}
		p.ignoreMerges, p.addBOS = true, true
	case "dbrx", "smaug-bpe":
		p.passes = []pass{splitLlama3(3)}
	case "chatglm-bpe", "glm4":
		p.passes = []pass{splitLlama3(3)}
		p.noBOS = true
	case "qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "hunyuan", "solar-open":
		p.passes = []pass{splitLlama3(1)}
		p.cleanSpaces = false
	case "stablelm2", "megrez":
		p.passes = []pass{splitLlama3(1)}
	case "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0",
		"mellum", "modern-bert", "exaone4", "mpt", "olmo", "jais":
		p.passes = []pass{splitGPT2}
	case "trillion", "granite-docling":
		p.passes = []pass{splitGPT2}
		p.cleanSpaces = false
	case "starcoder", "refact", "codeshell", "exaone", "minerva-7b", "mellum2":
		p.passes = []pass{regexPass(runOf(reN, 1, 1)), splitGPT2}
	case "smollm", "command-r":
		p.passes = []pass{regexPass(runOf(reN, 1, 1)), splitGPT2}
		p.cleanSpaces = false
	case "falcon":
		p.passes = []pass{
			regexPass(runOf(isFalconPunct, 1, 0)),
			splitGPT2,
			regexPass(runOf(isASCIIDigit, 3, 3)),
		}
	case "deepseek-llm":
		p.passes = []pass{
			regexPass(runOf(isCRLF, 1, 1)),
			regexPass(optSpaceRun(wSpace, inClass(deepseekLetters))),
			regexPass(optSpaceRun(wSpace, inClass(deepseekPunct))),
			regexPass(trailingSpace),
			regexPass(runOf(inClass(cjkDeepseek), 1, 0)),
			regexPass(runOf(reN, 1, 0)),
		}
		p.cleanSpaces = false
	case "deepseek-coder":
		p.passes = []pass{
			regexPass(runOf(isCRLF, 1, 1)),
			regexPass(optSpaceRun(reSpace, reL)),
			regexPass(optSpaceRun(reSpace, reP)),
			regexPass(runOf(inClass(cjkDeepseek), 1, 0)),
			regexPass(runOf(reN, 1, 1)),
		}
		p.cleanSpaces = false
	case "deepseek-v3":
		p.passes = []pass{
			regexPass(runOf(reN, 1, 3)),
			regexPass(runOf(inClass(cjkKana), 1, 0)),
			regexPass(deepseekV3Words),
		}
		p.cleanSpaces = false
	case "tekken":
		p.passes = []pass{regexPass(caseWords(1, false))}
		p.cleanSpaces, p.ignoreMerges, p.addBOS = false, true, true
	case "gpt-4o", "llama4", "kanana2", "talkie":
		// gpt-oss ships "gpt-4o": OpenAI's o200k split.
		p.passes = []pass{regexPass(caseWords(3, true))}
		p.cleanSpaces = false
	case "kimi-k2":
		p.passes = []pass{splitKimiK2}
		p.cleanSpaces = false
	default:
		return nil, &UnsupportedError{Key: "tokenizer.ggml.pre", Value: name}
	}
	return p, nil
}

// preSplit splits text into words (as UTF-8 strings appended to words).
func (p *preTokenizer) preSplit(c *splitCtx, text string, bufA, bufB []span) ([]span, []span) {
	c.rs = decodeRunes(c.rs[:0], text)
	c.fl = c.fl[:0]
	for _, r := range c.rs {
		c.fl = append(c.fl, cptFlags(r))
	}
	in := append(bufA[:0], span{0, len(c.rs)})
	out := bufB[:0]
	for _, ps := range p.passes {
		out = ps(c, in, out[:0])
		in, out = out, in
	}
	return in, out
}
