package chat

import (
	"fmt"
	"strings"
)

// The template source is rewritten before the engine compiles it. This file
// splits the source into text and tags and the tags into tokens; rewrite.go
// parses the tokens with jinja2's grammar and prints them back.

type tokKind int

const (
	tkName tokKind = iota
	tkString
	tkNumber
	tkOp
)

type token struct {
	kind tokKind
	text string // as written in the source
}

// twoCharOps are jinja2's operators of two characters.
var twoCharOps = [...]string{"**", "//", "==", "!=", "<=", ">="}

// tokenize splits the inside of a {{ }} or {% %} tag into tokens; whitespace
// only separates them.
func tokenize(s string) ([]token, error) {
	var toks []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(s) && s[j] != c {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return nil, fmt.Errorf("unterminated string starting %q", clip(s[i:]))
			}
			toks = append(toks, token{tkString, s[i : j+1]})
			i = j + 1
		case isDigit(c):
			j := i
			for j < len(s) && (isDigit(s[j]) || s[j] == '_' || s[j] == '.' && j+1 < len(s) && isDigit(s[j+1])) {
				j++
			}
			if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
				k := j + 1
				if k < len(s) && (s[k] == '+' || s[k] == '-') {
					k++
				}
				if k < len(s) && isDigit(s[k]) {
					for k < len(s) && isDigit(s[k]) {
						k++
					}
					j = k
				}
			}
			toks = append(toks, token{tkNumber, s[i:j]})
			i = j
		case isNameStart(c):
			j := i
			for j < len(s) && (isNameStart(s[j]) || isDigit(s[j])) {
				j++
			}
			toks = append(toks, token{tkName, s[i:j]})
			i = j
		default:
			op := s[i : i+1]
			for _, two := range twoCharOps {
				if strings.HasPrefix(s[i:], two) {
					op = two
					break
				}
			}
			toks = append(toks, token{tkOp, op})
			i += len(op)
		}
	}
	return toks, nil
}

func isDigit(c byte) bool     { return c >= '0' && c <= '9' }
func isNameStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func clip(s string) string {
	if len(s) > 30 {
		return s[:30] + "..."
	}
	return s
}

// piece is one part of the template source: text, or a tag split into its
// delimiters (with any -/+ marker) and its inside.
type piece struct {
	text  string // text pieces: the text; tags: the inside
	open  string // "{{", "{%-", ... ; empty for text
	close string // "}}", "-%}", ...
	kind  byte   // 0 text, '{' expression, '%' statement, '#' comment
	line  int
}

// splitTags cuts source into text and tags as jinja2's lexer does with its
// default delimiters. Quotes inside {{ }} and {% %} hide closers; the body of
// {% raw %} is text.
func splitTags(src string) ([]piece, error) {
	var out []piece
	line := 1
	textStart := 0
	for i := 0; i < len(src); {
		if src[i] != '{' || i+1 >= len(src) || !strings.ContainsRune("{%#", rune(src[i+1])) {
			if src[i] == '\n' {
				line++
			}
			i++
			continue
		}
		kind := src[i+1]
		if i > textStart {
			out = append(out, piece{text: src[textStart:i]})
		}
		openEnd := i + 2
		if openEnd < len(src) && (src[openEnd] == '-' || src[openEnd] == '+') {
			openEnd++
		}
		closer := map[byte]string{'{': "}}", '%': "%}", '#': "#}"}[kind]
		end, err := findCloser(src, openEnd, kind, closer)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		inner := src[openEnd:end]
		closeStart := end
		if kind != '#' && len(inner) > 0 && (inner[len(inner)-1] == '-' || inner[len(inner)-1] == '+') {
			inner = inner[:len(inner)-1]
			closeStart--
		} else if kind == '#' && len(inner) > 0 && inner[len(inner)-1] == '-' {
			inner = inner[:len(inner)-1]
			closeStart--
		}
		p := piece{text: inner, open: src[i:openEnd], close: src[closeStart : end+2], kind: kind, line: line}
		out = append(out, p)
		line += strings.Count(src[i:end+2], "\n")
		i = end + 2
		textStart = i
		if kind == '%' && isRawOpen(inner) {
			rawEnd, closeTag, err := findEndRaw(src, i)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			out = append(out, piece{text: src[i:rawEnd]})
			line += strings.Count(src[i:rawEnd], "\n")
			out = append(out, closeTag)
			i = rawEnd + len(closeTag.open) + len(closeTag.text) + len(closeTag.close)
			textStart = i
		}
	}
	if textStart < len(src) {
		out = append(out, piece{text: src[textStart:]})
	}
	return out, nil
}

func findCloser(src string, from int, kind byte, closer string) (int, error) {
	for j := from; j+1 < len(src); j++ {
		c := src[j]
		if kind != '#' && (c == '\'' || c == '"') {
			k := j + 1
			for k < len(src) && src[k] != c {
				if src[k] == '\\' {
					k++
				}
				k++
			}
			j = k
			continue
		}
		if src[j:j+2] == closer {
			return j, nil
		}
	}
	return 0, fmt.Errorf("tag opened with %q is never closed", "{"+string(kind))
}

func isRawOpen(inner string) bool { return strings.TrimSpace(inner) == "raw" }

// findEndRaw finds the {% endraw %} that closes a raw block starting at from.
func findEndRaw(src string, from int) (int, piece, error) {
	for j := from; j+1 < len(src); j++ {
		if src[j:j+2] != "{%" {
			continue
		}
		openEnd := j + 2
		if openEnd < len(src) && (src[openEnd] == '-' || src[openEnd] == '+') {
			openEnd++
		}
		end := strings.Index(src[openEnd:], "%}")
		if end < 0 {
			break
		}
		end += openEnd
		inner := src[openEnd:end]
		closeStart := end
		if n := len(inner); n > 0 && (inner[n-1] == '-' || inner[n-1] == '+') {
			inner = inner[:n-1]
			closeStart--
		}
		if strings.TrimSpace(inner) == "endraw" {
			return j, piece{text: inner, open: src[j:openEnd], close: src[closeStart : end+2], kind: '%'}, nil
		}
	}
	return 0, piece{}, fmt.Errorf("raw block is never closed with endraw")
}
