package tokenizer

import (
	"cmp"
	"slices"
	"strings"
)

// Kind is the tokenization algorithm.
type Kind int

// Tokenizer kinds, named as llama.cpp names them.
const (
	KindSPM Kind = iota + 1 // SentencePiece, tokenizer.ggml.model "llama"
	KindBPE                 // byte-level BPE, "gpt2"
	KindWPM                 // WordPiece, "bert"
)

func (k Kind) String() string {
	switch k {
	case KindSPM:
		return "SPM"
	case KindBPE:
		return "BPE"
	case KindWPM:
		return "WPM"
	}
	return "unknown"
}

// Token types as stored in tokenizer.ggml.token_type.
const (
	TypeUndefined   int32 = 0
	TypeNormal      int32 = 1
	TypeUnknown     int32 = 2
	TypeControl     int32 = 3
	TypeUserDefined int32 = 4
	TypeUnused      int32 = 5
	TypeByte        int32 = 6
)

// Vocab is the tokenizer metadata of a GGUF file. Pointer fields are optional:
// nil means the key is absent and the model's default applies, as in llama.cpp.
type Vocab struct {
	Model  string    // tokenizer.ggml.model: "llama", "gpt2" or "bert"
	Pre    string    // tokenizer.ggml.pre; empty means "default" for BPE
	Name   string    // general.name; a few models get per-token attributes by name
	Tokens []string  // tokenizer.ggml.tokens
	Scores []float32 // tokenizer.ggml.scores (optional)
	Types  []int32   // tokenizer.ggml.token_type (optional)
	Merges []string  // tokenizer.ggml.merges, "left right" (BPE only)

	BOS, EOS, EOT, EOM, UNK, SEP, PAD, Mask *int32

	AddBOS, AddEOS, AddSpacePrefix *bool
	Lowercase, StripAccents        *bool // tokenizer.ggml.normalizer.* (WPM)
}

// Token attribute bits, as llama_token_attr.
type attr uint16

const (
	attrUnknown attr = 1 << iota
	attrUnused
	attrNormal
	attrControl
	attrUserDefined
	attrByte
	attrNormalized
	attrLStrip
	attrRStrip
	attrSingleWord

	attrUndefined attr = 0
)

type tokenData struct {
	text  string
	score float32
	attr  attr
}

// null is LLAMA_TOKEN_NULL: no such token.
const null int32 = -1

// Tokenizer encodes and decodes text for one vocabulary. It is immutable and
// safe for concurrent use.
type Tokenizer struct {
	kind   Kind
	pre    string
	tokens []tokenData
	ids    map[string]int32

	split        *preTokenizer // BPE
	merges       mergeTable    // BPE
	ignoreMerges bool

	addSpacePrefix bool
	addBOS, addEOS bool
	cleanSpaces    bool
	lowercase      bool // WPM
	stripAccents   bool // WPM
	maxTokenLen    int
	// MinTokens's bound (bound.go): the most bytes of text one token
	// stands for (0: no bound), and the bytes that certainly end up in
	// some token's text.
	bytesPerToken   int
	counts          [256]bool
	everyByteCounts bool

	bos, eos, eot, eom, unk, sep, pad, mask int32

	eog      []int32 // sorted
	special  []int32 // control, user-defined and unknown tokens, longest text first
	pieces   []string
	byteToks [256]int32 // SPM: the token of each byte, or null
}

// modelDefaults holds the per-algorithm defaults of llama.cpp's vocab loader.
type modelDefaults struct {
	kind                           Kind
	bos, eos, unk, sep, pad, mask  int32
	addSpacePrefix, addBOS, addEOS bool
	cleanSpaces                    bool
}

func defaultsFor(model string) (modelDefaults, bool) {
	switch model {
	case "llama":
		return modelDefaults{kind: KindSPM, bos: 1, eos: 2, unk: 0, sep: null, pad: null, mask: null,
			addSpacePrefix: true, addBOS: true}, true
	case "bert":
		return modelDefaults{kind: KindWPM, bos: 101, eos: null, unk: 100, sep: 102, pad: 0, mask: 103,
			addBOS: true, cleanSpaces: true}, true
	case "gpt2":
		return modelDefaults{kind: KindBPE, bos: 11, eos: 11, unk: null, sep: null, pad: null, mask: null,
			cleanSpaces: true}, true
	}
	return modelDefaults{}, false
}

// New builds a tokenizer from vocabulary metadata.
func New(v Vocab) (*Tokenizer, error) {
	d, ok := defaultsFor(v.Model)
	if !ok {
		return nil, &UnsupportedError{Key: "tokenizer.ggml.model", Value: v.Model}
	}
	t := &Tokenizer{
		kind: d.kind, pre: v.Pre,
		bos: d.bos, eos: d.eos, eot: null, eom: null, unk: d.unk, sep: d.sep, pad: d.pad, mask: d.mask,
		addSpacePrefix: d.addSpacePrefix, addBOS: d.addBOS, addEOS: d.addEOS, cleanSpaces: d.cleanSpaces,
		lowercase: true, stripAccents: true,
	}
	if t.kind == KindBPE {
		p, err := lookupPre(v.Pre)
		if err != nil {
			return nil, err
		}
		t.split = p
		t.cleanSpaces = p.cleanSpaces
		t.ignoreMerges = p.ignoreMerges
		t.addBOS = p.addBOS
		if p.noBOS {
			t.bos = null
		}
	}
	if v.AddSpacePrefix != nil {
		t.addSpacePrefix = *v.AddSpacePrefix
	}
	if err := t.loadTokens(v); err != nil {
		return nil, err
	}
	if t.kind == KindBPE {
		if v.Merges == nil {
			// llama.cpp loads a kimi-k2 file without merges and then encodes
			// every word byte by byte; the model was not trained on that.
			return nil, invalidf("BPE vocabulary without tokenizer.ggml.merges; reconvert the model with a current llama.cpp convert_hf_to_gguf.py")
		}
		t.merges = buildMerges(v.Merges)
	}
	t.setSpecialIDs(v)
	if v.AddBOS != nil {
		t.addBOS = *v.AddBOS
	}
	if v.AddEOS != nil {
		t.addEOS = *v.AddEOS
	}
	if t.addBOS && t.bos == null {
		return nil, invalidf("add_bos_token is set but the vocabulary has no BOS token")
	}
	if t.addEOS && t.eos == null {
		return nil, invalidf("add_eos_token is set but the vocabulary has no EOS token")
	}
	if t.kind == KindWPM && (t.bos == null || t.sep == null) {
		return nil, invalidf("WordPiece vocabulary needs [CLS] (BOS) and [SEP] tokens")
	}
	if v.Lowercase != nil {
		t.lowercase = *v.Lowercase
		t.stripAccents = t.lowercase
	}
	if v.StripAccents != nil {
		t.stripAccents = *v.StripAccents
	}
	t.detectSpecial()
	t.buildSpecialCache()
	t.applyModelAttrs(v)
	t.buildByteTokens()
	t.buildPieces()
	t.buildBound()
	return t, nil
}

func (t *Tokenizer) loadTokens(v Vocab) error {
	n := len(v.Tokens)
	if n == 0 {
		return invalidf("no tokens")
	}
	if n > 1<<30 {
		return invalidf("%d tokens is too many", n)
	}
	if v.Scores != nil && len(v.Scores) < n {
		return invalidf("%d scores for %d tokens", len(v.Scores), n)
	}
	if v.Types != nil && len(v.Types) < n {
		return invalidf("%d token types for %d tokens", len(v.Types), n)
	}
	t.tokens = make([]tokenData, n)
	t.ids = make(map[string]int32, n)
	for i, s := range v.Tokens {
		if s == "" {
			s = "[EMPTY_" + itoa(i) + "]"
		}
		if prev, dup := t.ids[s]; dup {
			return invalidf("duplicate token %q at ids %d and %d", s, prev, i)
		}
		t.ids[s] = int32(i)
		t.maxTokenLen = max(t.maxTokenLen, len(s))
		td := tokenData{text: s, attr: attrNormal}
		if v.Scores != nil {
			td.score = v.Scores[i]
		}
		if v.Types != nil {
			td.attr = typeAttr(v.Types[i])
		}
		t.tokens[i] = td
	}
	return nil
}

func typeAttr(typ int32) attr {
	switch typ {
	case TypeNormal:
		return attrNormal
	case TypeUnknown:
		return attrUnknown
	case TypeControl:
		return attrControl
	case TypeUserDefined:
		return attrUserDefined
	case TypeUnused:
		return attrUnused
	case TypeByte:
		return attrByte
	}
	return attrUndefined
}

// setSpecialIDs applies metadata ids over the defaults; ids outside the
// vocabulary are ignored, and defaults outside it are disabled.
func (t *Tokenizer) setSpecialIDs(v Vocab) {
	n := int32(len(t.tokens))
	for _, s := range []struct {
		dst *int32
		src *int32
	}{
		{&t.bos, v.BOS}, {&t.eos, v.EOS}, {&t.eot, v.EOT}, {&t.eom, v.EOM},
		{&t.unk, v.UNK}, {&t.sep, v.SEP}, {&t.pad, v.PAD}, {&t.mask, v.Mask},
	} {
		if *s.dst >= n {
			*s.dst = null
		}
		if s.src != nil && *s.src >= 0 && *s.src < n {
			*s.dst = *s.src
		}
	}
}

var (
	eotTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
		"<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"}
	fimPadTexts = []string{"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}
	fimRepTexts = []string{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}
	fimSepTexts = []string{"<|file_sep|>"}
	eogTexts    = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
		"<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]",
		"[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
		"<｜end▁of▁sentence｜>", "[e~["}
)

// findControl returns the first token (by id) whose text is one of texts,
// marking it as a control token the way llama.cpp's loader does.
func (t *Tokenizer) findControl(texts []string) int32 {
	for id := range t.tokens {
		if slices.Contains(texts, t.tokens[id].text) {
			t.tokens[id].attr |= attrControl
			return int32(id)
		}
	}
	return null
}

// detectSpecial finds EOT/EOM/FIM tokens by their text and collects the
// end-of-generation set, following llama.cpp's loader.
func (t *Tokenizer) detectSpecial() {
	if t.eot == null {
		t.eot = t.findControl(eotTexts)
	}
	if t.eom == null {
		t.eom = t.findControl([]string{"<|eom_id|>"})
	}
	fimPad := t.findControl(fimPadTexts)
	fimRep := t.findControl(fimRepTexts)
	fimSep := t.findControl(fimSepTexts)
	for id := range t.tokens {
		td := &t.tokens[id]
		if td.attr&attrControl != 0 && td.attr&attrUnused == 0 && strings.Contains(td.text, "unused") {
			td.attr |= attrUnused
		}
	}
	eog := map[int32]bool{}
	for _, id := range []int32{fimPad, fimRep, fimSep} {
		if id != null {
			eog[id] = true
		}
	}
	for id := range t.tokens {
		if slices.Contains(eogTexts, t.tokens[id].text) {
			eog[int32(id)] = true
			t.tokens[id].attr |= attrControl
		}
	}
	for id := range t.tokens {
		switch t.tokens[id].text {
		case "<|channel|>", "<|message|>", "<|start|>", "<|constrain|>":
			// gpt-oss renders these even when specials are hidden.
			t.tokens[id].attr = attrUserDefined
		}
	}
	for _, id := range []int32{t.eos, t.eot, t.eom} {
		if id != null {
			eog[id] = true
		}
	}
	// o200k_harmony and solar-open: "<|end|>" ends a message, not generation.
	has := func(s string) int32 {
		for id := range eog {
			if t.tokens[id].text == s {
				return id
			}
		}
		return null
	}
	end := has("<|end|>")
	call := has("<|call|>") != null || has("<|calls|>") != null
	if end != null && call && (has("<|return|>") != null || has("<|flush|>") != null) {
		delete(eog, end)
		t.tokens[end].attr = attrUserDefined
	}
	if s := has("</s>"); s != null && has("<|tool_response>") != null {
		delete(eog, s)
		t.tokens[s].attr = attrNormal
	}
	for id := range eog {
		t.eog = append(t.eog, id)
	}
	slices.Sort(t.eog)
}

func (t *Tokenizer) buildSpecialCache() {
	for id, td := range t.tokens {
		if td.attr&(attrControl|attrUserDefined|attrUnknown) != 0 {
			t.special = append(t.special, int32(id))
		}
	}
	slices.SortStableFunc(t.special, func(a, b int32) int {
		return cmp.Compare(len(t.tokens[b].text), len(t.tokens[a].text))
	})
}

// applyModelAttrs sets the strip attributes llama.cpp assigns by model name.
func (t *Tokenizer) applyModelAttrs(v Vocab) {
	set := func(text string, a attr, on bool) {
		if id, ok := t.ids[text]; ok {
			if on {
				t.tokens[id].attr |= a
			} else {
				t.tokens[id].attr &^= a
			}
		}
	}
	name := strings.ToLower(v.Name)
	switch {
	case containsAny(v.Pre, "jina-v2-de", "jina-v2-es", "jina-v2-code"):
		set("<mask>", attrLStrip, true)
	case containsAny(name, "phi-3", "phi3"):
		for _, id := range t.special {
			t.tokens[id].attr |= attrRStrip
		}
		set("</s>", attrRStrip, true)
		for _, s := range []string{"<unk>", "<s>", "<|endoftext|>"} {
			set(s, attrRStrip, false)
		}
	case containsAny(name, "modern-bert"):
		set("[MASK]", attrLStrip, true)
	}
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func (t *Tokenizer) buildByteTokens() {
	for b := range 256 {
		t.byteToks[b] = t.byteToken(byte(b))
	}
}

// byteToken is llama.cpp's byte_to_token, with null where llama.cpp throws.
func (t *Tokenizer) byteToken(b byte) int32 {
	const hex = "0123456789ABCDEF"
	switch t.kind {
	case KindSPM:
		if id, ok := t.ids[string([]byte{'<', '0', 'x', hex[b>>4], hex[b&15], '>'})]; ok {
			return id
		}
		if id, ok := t.ids[string([]byte{b})]; ok {
			return id
		}
	default:
		if id, ok := t.ids[string(appendRune(nil, byteToRune[b]))]; ok {
			return id
		}
	}
	return null
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [20]byte
	p := len(b)
	for ; i > 0; i /= 10 {
		p--
		b[p] = byte('0' + i%10)
	}
	return string(b[p:])
}
