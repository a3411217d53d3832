package scenario

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// tokKind is the kind of a token.
type tokKind int

const (
	tEOL    tokKind = iota // end of the statement: end of line or a comment
	tIdent                 // a name or a constant
	tInt                   // an unsigned integer literal; a sign is a separate tMinus
	tExpect                // "== EXPECT": the text after == up to a comment or the end of line
	tMinus
	tPipe
	tDot
	tComma
	tAmp
	tAssign
	tLParen
	tRParen
	tLBrace
	tRBrace
	tLBrack
	tRBrack
)

var punct = map[byte]tokKind{
	'-': tMinus, '|': tPipe, '.': tDot, ',': tComma, '&': tAmp, '=': tAssign,
	'(': tLParen, ')': tRParen, '{': tLBrace, '}': tRBrace, '[': tLBrack, ']': tRBrack,
}

var tokNames = map[tokKind]string{
	tEOL: "end of line", tIdent: "name", tInt: "number", tExpect: "'=='",
	tMinus: "'-'", tPipe: "'|'", tDot: "'.'", tComma: "','", tAmp: "'&'", tAssign: "'='",
	tLParen: "'('", tRParen: "')'", tLBrace: "'{'", tRBrace: "'}'", tLBrack: "'['", tRBrack: "']'",
}

// token is one lexeme of a line. off is its byte offset in the line, col its 1-based column.
type token struct {
	kind tokKind
	text string // the identifier, the literal as written, or the expectation
	num  uint64 // tInt's magnitude
	off  int
	col  int
}

func (t token) String() string {
	switch t.kind {
	case tIdent, tInt:
		return echo(t.text)
	case tExpect:
		return "== " + echo(t.text)
	}
	return tokNames[t.kind]
}

// lexer splits one line into tokens. Statements never span lines, so each line gets its own.
type lexer struct {
	file string
	line int
	src  string
	off  int
	// colOff is a byte offset whose column is colNum. Tokens come in order, so the column of
	// each is counted on from the one before it and a line costs one pass, however long.
	colOff, colNum int
}

func newLexer(file string, line int, src string) *lexer {
	return &lexer{file: file, line: line, src: src, colNum: 1}
}

// errAt builds an error at column col of the line.
func (l *lexer) errAt(col int, format string, args ...any) *Error {
	return &Error{File: l.file, Line: l.line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

// col converts a byte offset, at or after the previous one asked for, into a column counted in
// characters, as editors count them.
func (l *lexer) col(off int) int {
	l.colNum += utf8.RuneCountInString(l.src[l.colOff:off])
	l.colOff = off
	return l.colNum
}

// maxEcho is how many characters of a name or literal an error message repeats.
const maxEcho = 40

// echo returns text as an error message repeats it: whole when short, else its first maxEcho
// characters and an ellipsis, so that a megabyte-long name makes a readable message.
func echo(text string) string {
	n := 0
	for i := range text {
		if n == maxEcho {
			return text[:i] + "…"
		}
		n++
	}
	return text
}

// next returns the next token, or an error for text that forms none.
func (l *lexer) next() (token, *Error) {
	for l.off < len(l.src) && (l.src[l.off] == ' ' || l.src[l.off] == '\t') {
		l.off++
	}
	start := l.off
	tok := token{off: start, col: l.col(start)}
	if start == len(l.src) || l.src[start] == '#' {
		tok.kind = tEOL
		return tok, nil
	}
	c := l.src[start]
	switch {
	case isIdentStart(c):
		for l.off < len(l.src) && isIdentPart(l.src[l.off]) {
			l.off++
		}
		if l.src[start:l.off] == "SIGRTMIN" && l.off+1 < len(l.src) && l.src[l.off] == '+' && isDigit(l.src[l.off+1]) {
			// SIGRTMIN+N, one constant, as signal results print it.
			for l.off++; l.off < len(l.src) && isDigit(l.src[l.off]); l.off++ {
			}
		}
		tok.kind, tok.text = tIdent, l.src[start:l.off]
		return tok, nil
	case isDigit(c):
		return l.number(tok)
	case c == '=' && strings.HasPrefix(l.src[start:], "=="):
		rest := l.src[start+2:]
		if i := strings.IndexByte(rest, '#'); i >= 0 {
			rest = rest[:i]
		}
		l.off = start + 2 + len(rest)
		tok.kind, tok.text = tExpect, strings.TrimSpace(rest)
		if tok.text == "" {
			return tok, l.errAt(tok.col, "expected a result after ==")
		}
		return tok, nil
	}
	if k, ok := punct[c]; ok {
		l.off++
		tok.kind = k
		return tok, nil
	}
	r, _ := utf8.DecodeRuneInString(l.src[start:])
	return tok, l.errAt(tok.col, "unexpected character %q", r)
}

// number scans a literal: the whole run of letters and digits, so that "09" or "12ab" is one
// malformed number rather than a number followed by a surprise.
func (l *lexer) number(tok token) (token, *Error) {
	for l.off < len(l.src) && isIdentPart(l.src[l.off]) {
		l.off++
	}
	text := l.src[tok.off:l.off]
	digits, base := text, 10
	switch {
	case len(text) > 1 && (text[1] == 'x' || text[1] == 'X') && text[0] == '0':
		digits, base = text[2:], 16
	case len(text) > 1 && text[0] == '0':
		digits, base = text[1:], 8
	}
	n, err := strconv.ParseUint(digits, base, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return tok, l.errAt(tok.col, "number %s out of range", echo(text))
		}
		return tok, l.errAt(tok.col, "malformed number %s", echo(text))
	}
	tok.kind, tok.text, tok.num = tInt, text, n
	return tok, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentPart(c byte) bool { return isIdentStart(c) || isDigit(c) }
